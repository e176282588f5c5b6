//! A training workload's results (MLPerf Storage's model, run as DLIO runs it): per run and
//! target, the accelerators, their utilization against the rule's line, samples/s and the
//! dataset bytes per second they stand for. Read from stored summaries only.

use std::fmt::Write as _;

use crate::table::{Cell, Table, TableRow};
use storlab_model::training::{DATASET_MEMORY_RULE, MemoryBound, TrainingResult};
use storlab_model::units::format_bytes;
use storlab_results::summary::RunSummary;

/// What the table's figures are, said under it.
pub const TRAINING_NOTE: &str = "DLIO-compatible, not an MLPerf Storage result. AU (accelerator utilization): per accelerator and epoch, the emulated compute time over the time its steps took, each epoch's first step left out (as DLIO leaves it out); the mean over accelerators and epochs, with the lowest. A run meets the rule when the mean is at least its line and no accelerator was cut short. Samples/s: each accelerator's counted samples over the time its counted steps took, added over accelerators; MB/s: samples/s times the mean sample's bytes on disk. Compute is a sleep; its timer's lateness is not charged to the storage.";

const COLUMNS: [(&str, bool); 11] = [
    ("run", true),
    ("target", false),
    ("model", false),
    ("accelerators", true),
    ("AU %", true),
    ("lowest AU %", true),
    ("line %", true),
    ("meets", false),
    ("samples/s", true),
    ("MB/s", true),
    ("dataset", false),
];

/// The dataset in a few words: files, format, size, whether this run wrote it, and how many
/// times the client's memory it is.
fn dataset_words(r: &TrainingResult) -> String {
    let d = &r.dataset;
    let mut out = format!(
        "{} {} files, {:.1} MB",
        d.files,
        d.format,
        d.bytes as f64 / 1e6
    );
    if d.generated {
        let _ = write!(out, ", written in {:.1} s", d.generation_seconds);
    }
    if let (Some(m), Some(ratio)) = (d.client_memory, d.memory_ratio()) {
        let bound = match m.bound {
            MemoryBound::Host => "the host's",
            MemoryBound::Cgroup => "its cgroup's limit",
        };
        let _ = write!(
            out,
            "; {} x the client's memory ({}, {bound})",
            ratio_text(ratio),
            format_bytes(m.bytes)
        );
    }
    out
}

/// A ratio with two decimals, or with two significant digits below 0.1 (a quick dataset is a
/// few ten-thousandths of a host's memory, which two decimals would show as 0.00).
fn ratio_text(ratio: f64) -> String {
    let decimals = if ratio > 0.0 && ratio < 0.1 {
        (1.0 - ratio.log10().floor()) as usize
    } else {
        2
    };
    format!("{ratio:.decimals$}")
}

/// Per step and target whose dataset was smaller than the rules ask against the client's
/// memory, a line that says so: its later epochs could be read from the page cache.
pub fn memory_rule_lines(summaries: &[RunSummary]) -> Vec<String> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut out = Vec::new();
    for s in summaries {
        for r in &s.training {
            let key = (s.step.as_str(), r.target.as_str());
            if seen.contains(&key) || r.dataset.meets_memory_rule() != Some(false) {
                continue;
            }
            seen.push(key);
            out.push(format!(
                "step `{}` on {}: the dataset is {} x the client's memory, below the rules' {DATASET_MEMORY_RULE} x: reads after the page cache was filled may have come from memory, not from the storage",
                s.step,
                r.target,
                ratio_text(r.dataset.memory_ratio().unwrap_or(0.0)),
            ));
        }
    }
    out
}

/// Per model and target, in the order first run, MLPerf Storage's result: of the training
/// runs that met the AU rule, the one with the most accelerators (the most samples/s among
/// equals); None when no run of that model met it.
pub fn best_results(
    runs: &[storlab_results::stored::StoredRun],
) -> Vec<(String, String, Option<&TrainingResult>)> {
    let mut best: Vec<(String, String, Option<&TrainingResult>)> = Vec::new();
    for r in runs.iter().flat_map(|r| &r.summary.training) {
        let i = match best
            .iter()
            .position(|(m, t, _)| *m == r.model && *t == r.target)
        {
            Some(i) => i,
            None => {
                best.push((r.model.clone(), r.target.clone(), None));
                best.len() - 1
            }
        };
        if !r.meets_au() {
            continue;
        }
        let key = |x: &TrainingResult| (x.accelerators, x.samples_per_second());
        match best[i].2 {
            Some(b) if key(r) <= key(b) => {}
            _ => best[i].2 = Some(r),
        }
    }
    best
}

/// One row per training result of every run, or None when no run trained.
pub fn training_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for r in &s.training {
            let (au, _) = r.au_percent();
            rows.push(TableRow {
                keys: vec![("run", s.run_index.to_string())],
                cells: vec![
                    Cell::num(s.run_index as f64, 0),
                    Cell::text(r.target.clone()),
                    Cell::text(r.model.clone()),
                    Cell::num(f64::from(r.accelerators), 0),
                    Cell::num(au, 2),
                    Cell::num(r.au_min_percent(), 2),
                    Cell::num(r.au_threshold_percent, 0),
                    Cell::text(if r.meets_au() { "yes" } else { "no" }),
                    Cell::num(r.samples_per_second(), 1),
                    Cell::num(r.bytes_per_second() / 1e6, 1),
                    Cell::text(dataset_words(r)),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        rows,
    })
}

/// The section of a study's Markdown report (empty without training runs).
pub fn markdown(summaries: &[RunSummary]) -> String {
    let Some(t) = training_table(summaries) else {
        return String::new();
    };
    let mut out = format!("\n## Training\n\n{}\n{TRAINING_NOTE}\n\n", t.markdown());
    for l in search_lines(summaries)
        .into_iter()
        .chain(memory_rule_lines(summaries))
    {
        let _ = writeln!(out, "- {l}");
    }
    out
}

/// Per step that swept `accelerators`: the answer of MLPerf's search, the most accelerators
/// whose run met the rule, and the first that did not (the sweep stops there).
pub fn search_lines(summaries: &[RunSummary]) -> Vec<String> {
    let mut steps: Vec<&str> = Vec::new();
    for s in summaries {
        if s.parameters.contains_key("accelerators")
            && !s.training.is_empty()
            && !steps.contains(&s.step.as_str())
        {
            steps.push(&s.step);
        }
    }
    steps
        .into_iter()
        .map(|step| {
            let runs = summaries
                .iter()
                .filter(|s| s.step == step)
                .flat_map(|s| s.training.iter());
            let (mut best, mut first_fail): (Option<&TrainingResult>, Option<&TrainingResult>) =
                (None, None);
            for r in runs {
                if r.meets_au() {
                    if best.is_none_or(|b| r.accelerators > b.accelerators) {
                        best = Some(r);
                    }
                } else if first_fail.is_none_or(|f| r.accelerators < f.accelerators) {
                    first_fail = Some(r);
                }
            }
            let answer = match best {
                Some(b) => format!(
                    "{} accelerators ({:.1} samples/s, {:.1} MB/s, AU {:.2}%)",
                    b.accelerators,
                    b.samples_per_second(),
                    b.bytes_per_second() / 1e6,
                    b.au_percent().0
                ),
                None => "none".to_string(),
            };
            let fail = first_fail.map_or_else(
                || "no point fell below it".to_string(),
                |f| {
                    format!(
                        "first below: {} accelerators (AU {:.2}%)",
                        f.accelerators,
                        f.au_percent().0
                    )
                },
            );
            let line = best.or(first_fail).map_or(0.0, |r| r.au_threshold_percent);
            format!(
                "step `{step}`: the most accelerators above the {line:.0}% line: {answer}; {fail}"
            )
        })
        .collect()
}

/// AU against accelerators: per step (model) one series of its runs' mean AU, and the rule's
/// line; None without at least one training run.
pub fn au_chart(summaries: &[RunSummary]) -> Option<String> {
    use crate::svg::{self, LineChart, Series, XAxis, YAxis};
    let mut series: Vec<Series> = Vec::new();
    let mut lines: Vec<(f64, String)> = Vec::new();
    for s in summaries {
        for r in &s.training {
            let name = format!("{} ({})", s.step, r.model);
            let x = f64::from(r.accelerators);
            let i = match series.iter().position(|p| p.name == name) {
                Some(i) => i,
                None => {
                    series.push(Series {
                        name,
                        points: Vec::new(),
                        markers: true,
                        dashed: Vec::new(),
                        warmup: Vec::new(),
                        color: None,
                        bands: Vec::new(),
                    });
                    series.len() - 1
                }
            };
            series[i].points.push((x, r.au_percent().0, String::new()));
            if !lines.iter().any(|(l, _)| *l == r.au_threshold_percent) {
                lines.push((
                    r.au_threshold_percent,
                    format!("{:.0}% line", r.au_threshold_percent),
                ));
            }
        }
    }
    if series.is_empty() {
        return None;
    }
    let most = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max);
    for (i, s) in series.iter_mut().enumerate() {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        s.color = Some(i);
    }
    for (line, name) in lines {
        series.push(Series {
            name,
            // A plain line without markers: the chart says dashed curves are moving averages.
            points: vec![(0.0, line, String::new()), (most, line, String::new())],
            markers: false,
            dashed: Vec::new(),
            warmup: Vec::new(),
            color: Some(7),
            bands: Vec::new(),
        });
    }
    Some(
        LineChart {
            labels: svg::Labels {
                id: "training-au",
                title: "Accelerator utilization against accelerators",
                x: "emulated accelerators",
                y: "AU (%)",
            },
            width: svg::HALF_WIDTH,
            y_div: 1.0,
            series: &series,
            x_axis: XAxis::Linear,
            y_axis: YAxis::Linear,
            marks: &[],
            shades: &[],
            x_min: None,
            x_max: None,
        }
        .svg(),
    )
}

/// Lines for the console after a run.
pub fn text_lines(s: &RunSummary) -> String {
    let mut out = String::new();
    for r in &s.training {
        let (au, sd) = r.au_percent();
        let cut = r.per_accelerator.iter().filter(|a| a.cut_short).count();
        let _ = writeln!(
            out,
            "training {} on {}: {} accelerators, AU {au:.2}% (sd {sd:.2}, lowest {:.2}) against {:.0}%: {}; {:.1} samples/s, {:.1} MB/s{}",
            r.model,
            r.target,
            r.accelerators,
            r.au_min_percent(),
            r.au_threshold_percent,
            if r.meets_au() {
                "meets it"
            } else {
                "does not meet it"
            },
            r.samples_per_second(),
            r.bytes_per_second() / 1e6,
            if cut > 0 {
                format!("; {cut} accelerators cut short")
            } else {
                String::new()
            }
        );
        let _ = writeln!(out, "dataset: {}", dataset_words(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::training::{AcceleratorSteps, ClientMemory, EpochSteps};

    #[test]
    fn a_training_run_gets_its_row_and_console_lines() {
        let mut s = storlab_results::fixtures::summary(1, "train", &[], &[("data", 1.0, 1)]);
        assert!(training_table([&s]).is_none());
        s.training.push(TrainingResult {
            target: "data".into(),
            model: "unet3d".into(),
            accelerators: 1,
            batch_size: 2,
            au_threshold_percent: 90.0,
            per_accelerator: vec![AcceleratorSteps {
                accelerator: 0,
                epochs: vec![EpochSteps {
                    epoch: 1,
                    steps: 5,
                    counted_steps: 4,
                    counted_ns: 1_000_000_000,
                    compute_ns: 950_000_000,
                    wait_ns: 50_000_000,
                    max_wait_ns: 20_000_000,
                }],
                cut_short: false,
            }],
            ..TrainingResult::default()
        });
        s.training[0].dataset.bytes = 3 << 30;
        s.training[0].dataset.client_memory = Some(ClientMemory {
            bytes: 2 << 30,
            bound: MemoryBound::Cgroup,
        });
        let md = markdown(std::slice::from_ref(&s));
        assert!(md.contains("| unet3d |") && md.contains("95.00"), "{md}");
        assert!(
            md.contains("1.50 x the client's memory (2GiB, its cgroup's limit)"),
            "{md}"
        );
        assert!(md.contains("below the rules' 5 x"), "{md}");
        s.training[0].dataset.bytes = 10 << 30;
        let md = markdown(std::slice::from_ref(&s));
        assert!(!md.contains("below the rules'"), "{md}");
        assert_eq!(ratio_text(0.000_321), "0.00032");
        assert_eq!(ratio_text(0.05), "0.050");
        assert_eq!(ratio_text(5.754), "5.75");
        assert_eq!(ratio_text(0.0), "0.00");
        let lines = text_lines(&s);
        assert!(
            lines.contains("AU 95.00%") && lines.contains("meets it"),
            "{lines}"
        );
        assert!(lines.contains("8.0 samples/s"), "{lines}");
    }
}
