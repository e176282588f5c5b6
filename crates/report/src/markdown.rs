//! Markdown: the summary of a study's runs that `storlab brief` writes as `brief.md`, and the
//! Markdown report of stored runs (summary, call-outs, warnings, one table per workload and
//! the disclosure). Tables come from the one table model ([`crate::table`]), figures
//! and call-outs from the one comparison; credentials are redacted.

use crate::headline::Headline;
use crate::model;
use crate::table::{points_table, results_table};
use storlab_model::baseline::Baseline;
use storlab_results::comparison::RunFigures;
use storlab_results::stored::StoredRun;
use storlab_results::summary::RunSummary;
use storlab_results::system::SystemInfo;

const METHOD: &str = "\n## Method\n\n\
- ops/s and MB/s: successful operations (bytes) completed during measurement, divided by the \
time from the start of measurement to the last measured completion. MB = 10^6 bytes, MiB = 2^20 bytes \
(IOmeter 2006's MB). A file server's figures are the total of its shares (IOPS and bytes per \
second added, the mean latency over all their operations). \
Repetitions of a point: all their operations over all their measured time.\n\
- Latency is service time: from submission to observed completion, recorded in HDR \
histograms with 3 significant digits (1 ns to 1 h); repetitions are combined by adding their \
histograms, never by averaging percentiles. Warm-up operations are kept out of every figure.\n";

/// The study events and recovery tables of `summaries` (empty when none had events).
fn events_markdown(summaries: &[RunSummary]) -> String {
    let mut out = String::new();
    if let Some(t) = crate::events::events_table(summaries) {
        out.push_str("\n## Events\n\nTimes in seconds from the start of measurement.\n\n");
        out.push_str(&t.markdown());
    }
    if let Some(t) = crate::events::recovery_table(summaries) {
        out.push_str("\n## Recovery\n\n");
        out.push_str(&t.markdown());
        out.push_str(&format!("\n{}\n", crate::events::RECOVERY_NOTE));
        for s in summaries {
            for r in s.recovery.iter().filter(|r| !r.note.is_empty()) {
                out.push_str(&format!(
                    "\n- run {}, `{}`: {}",
                    s.run_index, r.event, r.note
                ));
            }
        }
        out.push('\n');
    }
    if let Some(t) = crate::events::phases_table(summaries) {
        out.push_str("\n## Phases\n\n");
        out.push_str(&t.markdown());
        out.push_str(&format!("\n{}\n", crate::events::PHASES_NOTE));
    }
    if let Some(t) = crate::samples::samples_table(summaries) {
        out.push_str("\n## Samples\n\n");
        out.push_str(&t.markdown());
        out.push_str(&format!("\n{}\n", crate::samples::SAMPLES_NOTE));
    }
    if let Some(t) = crate::schedule::schedule_table(summaries) {
        out.push_str("\n## Rate schedule\n\n");
        out.push_str(&t.markdown());
        out.push_str(&format!("\n{}\n", crate::schedule::SCHEDULE_NOTE));
        if let Some(t) = crate::schedule::moving_average_table(summaries) {
            out.push_str("\n### Moving averages\n\n");
            out.push_str(&t.markdown());
            out.push_str(&format!("\n{}\n", crate::schedule::MOVING_AVERAGE_NOTE));
        }
    }
    let steady: Vec<String> = summaries
        .iter()
        .filter_map(|s| {
            let ss = s.steady_state.as_ref()?;
            Some(format!(
                "- run {} ({}): {}\n",
                s.run_index,
                s.step,
                ss.sentence()
            ))
        })
        .collect();
    if !steady.is_empty() {
        out.push_str("\n## Steady state\n\n");
        if let Some(t) = crate::steady::steady_table(summaries) {
            out.push_str(&t.markdown());
        }
        out.push_str(&format!("\n{}\n\n", crate::steady::STEADY_NOTE));
        out.extend(steady);
    }
    out.push_str(&crate::latency_search::markdown(summaries));
    out.push_str(&crate::training::markdown(summaries));
    out.push_str(&crate::checkpoint::markdown(summaries));
    for s in summaries {
        if let Some(d) = &s.distributed {
            out.push_str(&format!(
                "\n## Distributed run {}: per rank and per host\n\n{}",
                s.run_index,
                storlab_results::distributed::markdown(d)
            ));
        }
    }
    out
}

/// What was tested (a sentence per target) and the headline tables, as Markdown: the top of
/// every Markdown report, the same figures as the HTML's. `previous`: an earlier result's
/// headline to put beside (its `compared_with` names it).
pub fn top_markdown(runs: &[StoredRun], previous: Option<&Headline>) -> String {
    let mut out = String::from("## What was tested\n\n");
    for (name, s) in crate::tested::sentences(runs) {
        out.push_str(&format!("- **{name}**: {s}\n"));
    }
    let mut hl = crate::headline::of_runs(runs);
    if let Some(p) = previous {
        hl = hl.with_previous(p, p.compared_with.as_deref().unwrap_or(""));
    }
    if !hl.is_empty() {
        out.push_str("\n## Headline\n");
        if let Some(w) = &hl.compared_with {
            out.push_str(&format!(
                "\nBeside each figure: the same test and target in {w} (before) and the change.\n"
            ));
        }
        for (title, t) in hl.tables() {
            out.push_str(&format!("\n### {title}\n\n{}", t.markdown()));
        }
    }
    out.push('\n');
    out
}

/// A Markdown report of the given runs; `top` (see [`top_markdown`]) goes after the
/// description.
pub fn study_markdown(
    title: &str,
    description: Option<&str>,
    top: &str,
    runs: &[RunSummary],
    system: Option<&SystemInfo>,
) -> String {
    let mut out = format!("# {title}\n\n");
    if let Some(d) = description {
        out.push_str(&format!("{d}\n\n"));
    }
    out.push_str(top);
    out.push_str("## All runs\n\n");
    out.push_str(&results_table(runs, true).markdown());
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
    out.push_str(&events_markdown(runs));
    out.push_str(METHOD);
    if let Some(sys) = system {
        out.push_str("\n## System\n\n");
        out.push_str(&storlab_results::system::to_markdown(sys));
    }
    out
}

/// The report of stored runs as Markdown: summary, call-outs, warnings, one table per workload
/// (the same figures as the HTML report) and the disclosure. Credentials are redacted.
pub fn report_markdown(runs: &[StoredRun], baseline: Option<&Baseline>) -> String {
    let summaries: Vec<RunSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let figures: Vec<RunFigures> = runs.iter().map(RunFigures::of_stored).collect();
    let groups = model::group_runs(&figures);
    let mut studies: Vec<&str> = Vec::new();
    for s in &summaries {
        if !studies.contains(&s.study.as_str()) {
            studies.push(&s.study);
        }
    }
    let mut out = format!("# storlab brief: {}\n\n", studies.join(", "));
    out.push_str(&format!(
        "{} run{}; report from stored results only.\n\n",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    ));
    out.push_str(&top_markdown(runs, None));
    raid_markdown(&mut out, runs);
    // The study's own tables first, the brief's published figures after them.
    let hl = crate::headline::of_runs(runs);
    out.push_str(&crate::baseline::markdown(runs, &hl, baseline));
    callouts_and_warnings(&mut out, &summaries, &groups);
    for g in &groups {
        workload_markdown(&mut out, g, &summaries);
    }
    out.push_str(&events_markdown(&summaries));
    crate::verify::markdown_section(&mut out, &summaries.iter().collect::<Vec<_>>());
    out.push_str(METHOD);
    disclosure_markdown(&mut out, runs);
    storlab_results::redact(&out)
}

/// The RAID efficiency tables of the runs' arrays, each with its failure phases.
fn raid_markdown(out: &mut String, runs: &[StoredRun]) {
    for t in storlab_results::raid::tables(runs) {
        out.push_str("\n### RAID efficiency\n\n");
        match t {
            Ok(t) => {
                out.push_str(&crate::raid::table(&t).markdown());
                out.push('\n');
                out.push_str(&crate::raid::caption(&t).replace('\n', "\n\n"));
                out.push('\n');
                for f in crate::raid::failure_sections(&t) {
                    out.push_str(&format!("\n### {}\n\n", f.title));
                    out.push_str(&f.phases.markdown());
                    out.push('\n');
                    out.push_str(&f.caption.replace('\n', "\n\n"));
                    out.push('\n');
                }
            }
            Err(e) => out.push_str(&format!("{e}\n")),
        }
    }
}

/// The call-outs of every workload, then the warnings.
fn callouts_and_warnings(out: &mut String, summaries: &[RunSummary], groups: &[model::Group]) {
    let callouts: Vec<String> = groups
        .iter()
        .flat_map(|g| {
            model::callouts(g)
                .iter()
                .map(move |c| format!("- {}: {}", g.step, c.text))
        })
        .collect();
    if !callouts.is_empty() {
        out.push_str("\n### Call-outs\n\n");
        out.push_str(&callouts.join("\n"));
        out.push('\n');
    }
    let warnings: Vec<String> = model::warnings(summaries)
        .into_iter()
        .chain(model::latency_fallbacks(groups))
        .collect();
    if !warnings.is_empty() {
        out.push_str("\n### Warnings\n\n");
        for w in warnings {
            out.push_str(&format!("- **WARNING** {w}\n"));
        }
    }
}

/// One workload: its results table, YCSB's lines, its repetitions combined.
fn workload_markdown(out: &mut String, g: &model::Group, summaries: &[RunSummary]) {
    out.push_str(&format!("\n## Workload: {}\n\n", g.step));
    out.push_str(&results_table(g.runs.iter().map(|&i| &summaries[i]), false).markdown());
    for &ri in &g.runs {
        for l in crate::table::ycsb_lines(&summaries[ri]) {
            out.push_str(&format!("\n- run {}: {l}", summaries[ri].run_index));
        }
    }
    if let Some(t) = points_table(g) {
        out.push_str("\n### Repetitions combined\n\nEach point: its repetitions' histograms added (ops/s: all operations over all measured time); min and max: the repetitions' own figures.\n\n");
        out.push_str(&t.markdown());
    }
    out.push('\n');
}

/// The disclosure: each distinct system capture, what the sessions used, the study files.
fn disclosure_markdown(out: &mut String, runs: &[StoredRun]) {
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
            out.push_str(&storlab_results::system::to_markdown(sys));
        }
    }
    if shown.is_empty() {
        out.push_str("\nNo system capture was stored with these runs.\n");
    }
    let summaries: Vec<_> = runs.iter().map(|r| &r.summary).collect();
    let used = crate::table::session_used_rows(&summaries);
    if !used.is_empty() {
        out.push_str(
            "\n### What the sessions used\n\n| target | what | used | runs |\n|---|---|---|---|\n",
        );
        for [t, k, v, r] in &used {
            out.push_str(&format!("| {t} | {k} | {v} | {r} |\n"));
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
}
