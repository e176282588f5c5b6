//! The published figures beside the user's: for each figure of a brief's baseline
//! ([`storlab_model::baseline`]), the same test and metric measured here (the headline's
//! tables, the RAID efficiency table, a rate schedule's figures), the ratio of the two, and
//! plainly that the hardware differs. A figure with nothing measured to match is listed too,
//! marked so: a missing figure is never dropped.

use crate::headline::Headline;
use crate::table::{Cell, Table, TableRow};
use storlab_model::baseline::{Baseline, FigureUnit, PublishedFigure};
use storlab_results::stored::StoredRun;

/// One figure measured here, in storlab's stored unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub table: String,
    pub test: String,
    pub target: String,
    pub metric: String,
    pub value: f64,
    /// A time that was not reached: `value` is how long it was waited for (a `wait-for` that
    /// timed out or was cut off), so the figure is more than that.
    pub not_reached: bool,
}

/// The published figures beside the measured ones.
pub struct Beside {
    /// What the figures are and where from: one sentence.
    pub heading: String,
    /// The hardware differs; and the brief's own note on its method, when it has one.
    pub notes: Vec<String>,
    pub table: Table,
}

/// The figures measured in `runs` that a baseline can name: every headline figure (a training
/// study's per model: `accelerators`, `AU`, `samples/s`, `MB/s`, in table `Training`), the RAID
/// efficiency rows (`raw`, `theoretical`, `RAID`, `efficiency`), a schedule's reported
/// throughput and moving-average deviations, a fault's recovery times (seconds), and each
/// step's call-outs.
pub fn measured(runs: &[StoredRun], headline: &Headline) -> Vec<Measured> {
    let mut out = Vec::new();
    for s in &headline.sections {
        for r in &s.rows {
            for (m, v) in s.metrics.iter().zip(&r.values) {
                if let Some(v) = v {
                    out.push(Measured {
                        table: s.title.to_string(),
                        test: r.test.clone(),
                        target: r.target.clone(),
                        metric: m.name.to_string(),
                        value: *v,
                        not_reached: false,
                    });
                }
            }
        }
    }
    for t in storlab_results::raid::tables(runs).into_iter().flatten() {
        for r in &t.rows {
            let figures = [
                ("raw", r.raw_rate),
                ("theoretical", r.theoretical_rate),
                ("RAID", r.real_rate),
                ("efficiency", r.efficiency),
            ];
            for (metric, value) in figures {
                out.push(Measured {
                    table: "RAID efficiency".into(),
                    test: r.pattern.label().into(),
                    target: t.geometry.array.clone(),
                    metric: metric.into(),
                    value,
                    not_reached: false,
                });
            }
        }
    }
    out.extend(callouts(runs));
    for run in runs {
        let schedule = run.summary.schedule.as_ref();
        let mut figures = Vec::new();
        if let Some(s) = schedule {
            figures.push((
                "reported throughput".to_string(),
                s.reported_rate_ops,
                false,
            ));
            for m in &s.moving_averages {
                if let Some(d) = m.max_deviation {
                    figures.push((
                        format!("max deviation, {}-phase moving average", m.window_phases),
                        d,
                        false,
                    ));
                }
            }
        }
        figures.extend(recovery_figures(&run.summary));
        // A scheduled run's figures are the elasticity brief's; a fault elsewhere, a recovery.
        let table = if schedule.is_some() {
            "Elastic"
        } else {
            "Recovery"
        };
        out.extend(
            figures
                .into_iter()
                .map(|(metric, value, not_reached)| Measured {
                    table: table.into(),
                    test: run.summary.step.clone(),
                    target: "all".into(),
                    metric,
                    value,
                    not_reached,
                }),
        );
    }
    out
}

/// Each step's call-outs (table `Call-outs`, test the step's name): `largest ops/s ratio` (a
/// ratio) and `largest p99 improvement` (a fraction), measured on `REFERENCE vs OTHER at
/// POINT`, the systems and point they were found at.
fn callouts(runs: &[StoredRun]) -> Vec<Measured> {
    let Some(study) = runs.first().map(|r| r.summary.study.clone()) else {
        return Vec::new();
    };
    let comparison = storlab_results::comparison::compare_stored(&study, runs);
    let mut out = Vec::new();
    for step in &comparison.steps {
        let found = [
            ("largest ops/s ratio", &step.largest_ops_ratio),
            ("largest p99 improvement", &step.largest_p99_improvement),
        ];
        for (metric, c) in found {
            let Some(c) = c else { continue };
            let point = storlab_results::comparison::parameters_text(&c.parameters);
            let at = if point.is_empty() {
                String::new()
            } else {
                format!(" at {point}")
            };
            out.push(Measured {
                table: "Call-outs".into(),
                test: step.step.clone(),
                target: format!("{} vs {}{at}", c.best, c.worst),
                metric: metric.into(),
                value: c.value,
                not_reached: false,
            });
        }
    }
    out
}

/// A run's recovery figures, seconds: per fault (`recovery` event) the time to the first
/// success and to recover (back within its bound of the baseline for `settle`); per
/// `wait-for` that succeeded, `time to NAME` (its name's dashes as spaces: `full-redundancy`
/// gives `time to full redundancy`) from the fault before it (else from its own start); per
/// `wait-for` that timed out or was cut off, the same name with how long it was waited for,
/// marked not reached (true): the time is more than that, never no figure at all.
fn recovery_figures(s: &storlab_results::summary::RunSummary) -> Vec<(String, f64, bool)> {
    use storlab_results::events::EventStatus;
    let mut out = Vec::new();
    for r in &s.recovery {
        if let Some(t) = r.time_to_first_success_seconds {
            out.push(("time to first success".to_string(), t, false));
        }
        if let Some(t) = r.time_to_recover_seconds {
            out.push(("time to recover".to_string(), t, false));
        }
    }
    for e in s.events.iter().filter(|e| e.kind == "wait-for") {
        let Some(o) = e.outcome.as_ref() else {
            continue;
        };
        let not_reached = match o.status {
            EventStatus::Ok => false,
            EventStatus::TimedOut | EventStatus::CutOff => true,
            _ => continue,
        };
        let end_s = o.end_ns as f64 / 1e9;
        let fault_s = s
            .recovery
            .iter()
            .map(|r| r.event_seconds)
            .filter(|at| *at <= e.time_seconds + 1e-9)
            .reduce(f64::max);
        let value = fault_s.map_or(o.duration_seconds, |at| end_s - at);
        out.push((
            format!("time to {}", o.name.replace('-', " ")),
            value,
            not_reached,
        ));
    }
    out
}

/// Three significant digits, thousands separated from 1,000 up.
pub(crate) fn significant(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        crate::table::thousands(v)
    } else if a == 0.0 || !a.is_finite() {
        format!("{v}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 9) as usize;
        format!("{v:.decimals$}")
    }
}

/// A published value as the brief wrote it (every digit kept), thousands separated.
fn as_written(unit: FigureUnit, v: f64) -> String {
    let text = format!("{v}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let digits: Vec<char> = int.chars().collect();
    let mut grouped = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && c.is_ascii_digit() && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(*c);
    }
    if !frac.is_empty() {
        grouped = format!("{grouped}.{frac}");
    }
    match unit {
        FigureUnit::Percent => format!("{grouped}%"),
        FigureUnit::Times => format!("{grouped}x"),
        FigureUnit::Count => grouped,
        _ => format!("{grouped} {}", unit_name(unit)),
    }
}

fn unit_name(unit: FigureUnit) -> String {
    serde_json::to_value(unit)
        .ok()
        .and_then(|u| u.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The value in the brief's unit (`5.54 ms`, `30,316 ops/s`, `7.5%`), to three significant
/// digits, so a figure far from the brief's still reads (`0.000314 ms`).
fn show(unit: FigureUnit, stored: f64) -> String {
    let v = stored / unit.to_stored(1.0);
    match unit {
        FigureUnit::Percent => format!("{}%", significant(v)),
        FigureUnit::Times => format!("{}x", significant(v)),
        FigureUnit::Count if v.fract() == 0.0 => crate::table::thousands(v),
        _ => format!("{} {}", significant(v), unit_name(unit)),
    }
}

fn text(s: impl Into<String>) -> Cell {
    Cell {
        shown: s.into(),
        value: None,
    }
}

/// The rows of one published figure: one per matching measured figure (each target), or one
/// saying nothing here measured it.
fn rows_of(f: &PublishedFigure, measured: &[Measured], with_system: bool) -> Vec<TableRow> {
    let published = f.unit.to_stored(f.value);
    let lead = |cells: &mut Vec<Cell>| {
        cells.push(text(format!("{} ({})", f.test, f.table)));
        cells.push(text(f.metric.clone()));
        if with_system {
            cells.push(text(f.system.clone().unwrap_or_default()));
        }
        cells.push(Cell {
            shown: as_written(f.unit, f.value),
            value: Some(published),
        });
    };
    let keys = vec![("test", f.test.clone()), ("metric", f.metric.clone())];
    let found: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.table == f.table && m.test == f.test && m.metric == f.metric)
        .filter(|m| f.target.as_ref().is_none_or(|t| *t == m.target))
        .collect();
    if found.is_empty() {
        let mut cells = Vec::new();
        lead(&mut cells);
        cells.extend([text("-"), text("not measured here"), text("-")]);
        return vec![TableRow { keys, cells }];
    }
    found
        .into_iter()
        .map(|m| {
            let mut cells = Vec::new();
            lead(&mut cells);
            cells.push(text(m.target.clone()));
            // Not reached: more than the time waited, so the ratio is a lower bound.
            let (before, value) = if m.not_reached {
                ("not reached after ", None)
            } else {
                ("", Some(m.value))
            };
            cells.push(Cell {
                shown: format!("{before}{}", show(f.unit, m.value)),
                value,
            });
            let ratio = (published != 0.0).then(|| m.value / published);
            let above = if m.not_reached { "> " } else { "" };
            cells.push(Cell {
                shown: ratio
                    .map(|r| format!("{above}{}", significant(r)))
                    .unwrap_or_else(|| "-".into()),
                value: ratio.filter(|_| !m.not_reached),
            });
            TableRow {
                keys: keys.clone(),
                cells,
            }
        })
        .collect()
}

/// The baseline to show: the one given (`storlab report --baseline FILE`), else the one the
/// runs' study named (stored with its results). A stored one that cannot be read is an error
/// the report shows, not a silent absence.
pub fn chosen(runs: &[StoredRun], given: Option<&Baseline>) -> Result<Option<Baseline>, String> {
    match given {
        Some(b) => Ok(Some(b.clone())),
        None => storlab_results::stored::stored_baseline(runs).map_err(|e| e.to_string()),
    }
}

/// The section as Markdown (empty without a baseline).
pub fn markdown(runs: &[StoredRun], headline: &Headline, given: Option<&Baseline>) -> String {
    match chosen(runs, given) {
        Ok(None) => String::new(),
        Ok(Some(b)) => {
            let s = beside(&b, runs, headline);
            let mut out = format!("\n## {}\n\n", s.heading);
            for n in &s.notes {
                out.push_str(&format!("{n}\n\n"));
            }
            out.push_str(&s.table.markdown());
            out
        }
        Err(e) => format!("\n## Published figures\n\nNot shown: {e}\n"),
    }
}

/// The baseline's figures beside what `runs` measured.
pub fn beside(baseline: &Baseline, runs: &[StoredRun], headline: &Headline) -> Beside {
    let measured = measured(runs, headline);
    let with_system = baseline.figures.iter().any(|f| f.system.is_some());
    let columns = [
        ("test", false),
        ("metric", false),
        ("published system", false),
        ("published", true),
        ("measured on", false),
        ("measured here", true),
        ("ratio", true),
    ]
    .into_iter()
    .filter(|(n, _)| with_system || *n != "published system")
    .map(|(n, num)| (n.to_string(), num))
    .collect();
    let rows = baseline
        .figures
        .iter()
        .flat_map(|f| rows_of(f, &measured, with_system))
        .collect();
    let mut notes = vec![
        format!("From {}: {}.", baseline.brief, baseline.source),
        format!(
            "The hardware differs: the published figures are of {}, these are of the system this study ran on. The ratio is measured here over published; for latency and run time, below 1 is faster.",
            baseline.system
        ),
    ];
    if !baseline.note.is_empty() {
        notes.push(baseline.note.clone());
    }
    Beside {
        heading: format!("Published figures: {}", baseline.name),
        notes,
        table: Table { columns, rows },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headline::{Metric, Row, Section, Unit};

    fn baseline() -> Baseline {
        Baseline::from_toml(
            r#"
name = "kioxia-xd6-mongodb"
brief = "KIOXIA XD6 MongoDB brief"
source = "shared/seeds/000"
system = "MongoDB 5.0 on one XD6 E1.S SSD"
[[figure]]
table = "YCSB"
test = "workload-a"
metric = "ops/s"
value = 30_316.44
unit = "ops/s"
wording = "Operations Throughput"
[[figure]]
table = "YCSB"
test = "workload-a"
metric = "mean read latency"
value = 5.54
unit = "ms"
wording = "Average Read Latency"
[[figure]]
table = "YCSB"
test = "workload-a"
metric = "run time"
value = 18.33
unit = "h"
wording = "Run Time"
"#,
        )
        .expect("baseline")
    }

    #[test]
    fn published_figures_sit_beside_the_measured_with_the_ratio() {
        let h = Headline {
            sections: vec![Section {
                title: "YCSB",
                metrics: vec![
                    Metric {
                        name: "ops/s",
                        unit: Unit::Rate,
                    },
                    Metric {
                        name: "mean read latency",
                        unit: Unit::Latency,
                    },
                ],
                rows: vec![Row {
                    step: "workload-a".into(),
                    test: "workload-a".into(),
                    target: "mongodb".into(),
                    values: vec![Some(15_158.0), Some(11_080_000.0)],
                    previous: None,
                }],
            }],
            compared_with: None,
        };
        let b = beside(&baseline(), &[], &h);
        let shown: Vec<Vec<&str>> = b
            .table
            .rows
            .iter()
            .map(|r| r.cells.iter().map(|c| c.shown.as_str()).collect())
            .collect();
        assert_eq!(
            shown[0],
            [
                "workload-a (YCSB)",
                "ops/s",
                "30,316.44 ops/s",
                "mongodb",
                "15,158 ops/s",
                "0.500"
            ]
        );
        assert_eq!(shown[1][2..], ["5.54 ms", "mongodb", "11.1 ms", "2.00"]);
        // Not measured here (this headline has no run time figure): said, not dropped.
        assert_eq!(shown[2][2..], ["18.33 h", "-", "not measured here", "-"]);
        assert_eq!(
            as_written(FigureUnit::OpsPerSecond, 1_058_304.0),
            "1,058,304 ops/s"
        );
        assert_eq!(show(FigureUnit::Milliseconds, 314.0), "0.000314 ms");
        assert_eq!(show(FigureUnit::Percent, 0.075), "7.50%");
        assert!(
            b.notes[1].starts_with("The hardware differs"),
            "{:?}",
            b.notes
        );
        assert!(b.heading.contains("kioxia-xd6-mongodb"));
    }

    /// The data-accessibility step's run: the leader lost 30 s in, throughput back 12.5 s
    /// later, the cluster fully redundant 41.25 s after the loss (the wait started with it and
    /// ended 71.25 s in). The brief's "time to full redundancy" (2:05:38) finds it, the
    /// elasticity step's figures their own step's name.
    #[test]
    fn recovery_times_are_measured_figures_of_their_step() {
        let mut s = storlab_results::fixtures::summary(2, "data-accessibility", &[], &[]);
        s.recovery = vec![
            serde_json::from_value(serde_json::json!({
                "event": "leader-lost", "event-seconds": 30.0, "interval-seconds": 0.6,
                "baseline-window-seconds": 6.0, "baseline-covered-seconds": 6.0,
                "baseline-rate-ops": 500.0, "outage-seconds": 9.0,
                "time-to-first-success-seconds": 9.5, "recovered": true,
                "time-to-recover-seconds": 12.5, "recovered-within": 0.05,
                "settle-seconds": 6.0, "errors-during-outage": {}, "errors-until-recovered": {}
            }))
            .expect("a recovery"),
        ];
        s.events = vec![
            serde_json::from_value(serde_json::json!({
                "time-seconds": 30.0, "kind": "wait-for", "detail": "",
                "name": "full-redundancy", "status": "ok", "start-ns": 30_000_000_000i64,
                "end-ns": 71_250_000_000i64, "duration-seconds": 41.25
            }))
            .expect("an event"),
            serde_json::from_value(serde_json::json!({
                "time-seconds": 30.0, "kind": "wait-for", "detail": "",
                "name": "never", "status": "timed-out", "start-ns": 30_000_000_000i64,
                "end-ns": 90_000_000_000i64, "duration-seconds": 60.0
            }))
            .expect("an event"),
        ];
        s.schedule = Some(storlab_results::schedule::ScheduleResult {
            total_rate_ops: None,
            total_workers: Some(40),
            phase_seconds: 6.0,
            measured_seconds: 60.0,
            phases: Vec::new(),
            groups: Vec::new(),
            shape: None,
            reported_rate_ops: 480.0,
            moving_averages: Vec::new(),
        });
        let run = StoredRun::of_summary(s);
        let h = Headline {
            sections: Vec::new(),
            compared_with: None,
        };
        let got: Vec<(String, String, f64, bool)> = measured(std::slice::from_ref(&run), &h)
            .into_iter()
            .map(|m| (m.test, m.metric, m.value, m.not_reached))
            .collect();
        let step = "data-accessibility".to_string();
        assert_eq!(
            got,
            vec![
                (step.clone(), "reported throughput".into(), 480.0, false),
                (step.clone(), "time to first success".into(), 9.5, false),
                (step.clone(), "time to recover".into(), 12.5, false),
                (step.clone(), "time to full redundancy".into(), 41.25, false),
                // A wait that timed out: not reached after the 60 s it waited from the loss.
                (step.clone(), "time to never".into(), 60.0, true),
            ],
        );
        // The published 2:05:38 beside the run's figure for `metric`, as the table shows it.
        let shown = |metric: &str| -> Vec<String> {
            let b = Baseline::from_toml(&format!(
                r#"
name = "hci"
brief = "TPCx-HCI"
source = "shared/seeds/002"
system = "vSAN"
[[figure]]
table = "Elastic"
test = "data-accessibility"
metric = "{metric}"
value = 7_538
unit = "s"
wording = "after 2:05:38"
"#
            ))
            .expect("baseline");
            let side = beside(&b, std::slice::from_ref(&run), &h);
            side.table.rows[0].cells[2..]
                .iter()
                .map(|c| c.shown.clone())
                .collect()
        };
        assert_eq!(
            shown("time to full redundancy"),
            ["7,538 s", "all", "41.2 s", "0.00547"]
        );
        // A wait that did not succeed gives a lower bound, never a missing figure.
        assert_eq!(
            shown("time to never"),
            ["7,538 s", "all", "not reached after 60.0 s", "> 0.00796"]
        );
    }

    /// MLPerf's result per model: the run with the most accelerators that met the AU rule; a
    /// run below the line, however many accelerators, is not the result.
    #[test]
    fn the_training_result_is_the_most_accelerators_that_met_the_rule() {
        use storlab_model::training::{AcceleratorSteps, EpochSteps, TrainingResult};
        let run = |index, accelerators, au_percent: f64| {
            let mut s = storlab_results::fixtures::summary(index, "unet3d", &[], &[]);
            let e = EpochSteps {
                epoch: 1,
                steps: 11,
                counted_steps: 10,
                counted_ns: 1_000_000_000,
                compute_ns: (au_percent * 1e7) as u64,
                ..EpochSteps::default()
            };
            s.training.push(TrainingResult {
                target: "data".into(),
                model: "unet3d".into(),
                accelerators,
                batch_size: 7,
                au_threshold_percent: 90.0,
                per_accelerator: (0..accelerators)
                    .map(|a| AcceleratorSteps {
                        accelerator: a,
                        epochs: vec![e.clone()],
                        cut_short: false,
                    })
                    .collect(),
                ..TrainingResult::default()
            });
            StoredRun::of_summary(s)
        };
        let runs = [run(1, 2, 99.0), run(2, 4, 95.0), run(3, 8, 60.0)];
        let h = crate::headline::of_runs(&runs);
        let got: Vec<(String, f64)> = measured(&runs, &h)
            .into_iter()
            .filter(|m| m.table == "Training")
            .map(|m| (m.metric, m.value))
            .collect();
        let names: Vec<&str> = got.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(names, ["accelerators", "AU", "samples/s", "MB/s"]);
        assert_eq!(got[0].1, 4.0);
        assert!((got[1].1 - 0.95).abs() < 1e-9, "{got:?}");
        // 4 accelerators of 10 counted steps of 7 samples in 1 s each.
        assert!((got[2].1 - 280.0).abs() < 1e-9, "{got:?}");
        // The training table leads the headline; its runs add no throughput rows.
        assert_eq!(h.sections.len(), 1, "{h:?}");

        // No run met the rule: 0 accelerators, the other figures not given.
        let failed = [run(1, 2, 60.0)];
        let h = crate::headline::of_runs(&failed);
        let got: Vec<(String, f64)> = measured(&failed, &h)
            .into_iter()
            .map(|m| (m.metric, m.value))
            .collect();
        assert_eq!(got, [("accelerators".to_string(), 0.0)]);
    }
}
