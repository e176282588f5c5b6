//! The headline of a report: one table in the shape of the study, detected from what the stored
//! results hold (never from file or study names). Block workloads give the storage
//! characterization (IOPS, MB/s and p99 per test and target; on a file server: IOPS, MB/s,
//! MiB/s and mean latency per access specification, each server's shares added up:
//! [`crate::headline::fileserver`]), db_bench workloads the key-value figures (ops/s and
//! p99 per benchmark and thread count), YCSB workloads the MongoDB brief's four metrics (run
//! time, ops/s, mean read and update latency), training workloads MLPerf Storage's result per
//! model (the most accelerators that met the AU rule, their AU, samples/s and MB/s), anything
//! else ops/s, MB/s and p99. A RAID study's
//! headline is its efficiency table and a rate schedule's its schedule figures: those keep their
//! own tables and add no rows here. The same figures go to the HTML, the Markdown and the
//! terminal; `with_previous` puts an earlier result's figures beside each one with the change.

use crate::model::{Group, Point};
use crate::table::{Cell, Table, TableRow, thousands};
use storlab_model::op::ResultKind;
use storlab_model::units::{format_bytes, format_ns};
use storlab_results::stored::StoredRun;

pub mod fileserver;

/// How a figure is shown and which way is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    /// Operations per second (IOPS for storage).
    Rate,
    /// 10^6 bytes per second.
    MegaBytes,
    /// 2^20 bytes per second (IOmeter 2006's MBps).
    MebiBytes,
    /// Nanoseconds, shown in a fitting unit.
    Latency,
    Seconds,
    /// A whole count (accelerators).
    Count,
    /// A fraction, shown as a percentage (accelerator utilization).
    Fraction,
    /// A rate shown with one decimal (samples/s).
    Decimal,
}

impl Unit {
    fn show(self, v: f64) -> String {
        match self {
            Unit::Rate => thousands(v),
            Unit::MegaBytes => format!("{:.1}", v / 1e6),
            Unit::MebiBytes => format!("{:.1}", v / (1u64 << 20) as f64),
            Unit::Latency => format_ns(v),
            // As the YCSB brief words its run time ("18.33 hours").
            Unit::Seconds if v >= 3600.0 => format!("{:.2} h", v / 3600.0),
            Unit::Seconds if v >= 60.0 => format!("{:.1} min", v / 60.0),
            Unit::Seconds => format!("{v:.2} s"),
            Unit::Count => thousands(v),
            Unit::Fraction => format!("{:.2}%", v * 100.0),
            Unit::Decimal => format!("{v:.1}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
}

/// One test (a workload at one sweep point) on one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub step: String,
    pub test: String,
    pub target: String,
    pub values: Vec<Option<f64>>,
    /// The earlier result's figures of the same test and target, when compared.
    pub previous: Option<Vec<Option<f64>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: &'static str,
    pub metrics: Vec<Metric>,
    pub rows: Vec<Row>,
}

/// The headline: one section per shape present (the brief has storage and key-value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    pub sections: Vec<Section>,
    /// What the figures were compared with (shown above the table), when compared.
    pub compared_with: Option<String>,
}

const STORAGE: &str = "Storage";
pub const FILE_SERVER: &str = "File server";
const KEY_VALUE: &str = "Key-value";
const YCSB: &str = "YCSB";
/// MLPerf Storage's result per model: the search's answer (see
/// [`crate::training::best_results`]).
pub const TRAINING: &str = "Training";
const OTHER: &str = "Throughput";

fn metrics_of(title: &str) -> Vec<Metric> {
    let m = |name, unit| Metric { name, unit };
    match title {
        STORAGE => vec![
            m("IOPS", Unit::Rate),
            m("MB/s", Unit::MegaBytes),
            m("p99", Unit::Latency),
        ],
        FILE_SERVER => vec![
            m("IOPS", Unit::Rate),
            m("MB/s", Unit::MegaBytes),
            m("MiB/s", Unit::MebiBytes),
            m("mean latency", Unit::Latency),
        ],
        KEY_VALUE => vec![m("ops/s", Unit::Rate), m("p99", Unit::Latency)],
        TRAINING => vec![
            m("accelerators", Unit::Count),
            m("AU", Unit::Fraction),
            m("samples/s", Unit::Decimal),
            m("MB/s", Unit::MegaBytes),
        ],
        YCSB => vec![
            m("run time", Unit::Seconds),
            m("ops/s", Unit::Rate),
            m("mean read latency", Unit::Latency),
            m("mean update latency", Unit::Latency),
        ],
        _ => vec![
            m("ops/s", Unit::Rate),
            m("MB/s", Unit::MegaBytes),
            m("p99", Unit::Latency),
        ],
    }
}

/// The headline of stored runs.
pub fn of_runs(runs: &[StoredRun]) -> Headline {
    let figures: Vec<storlab_results::comparison::RunFigures> = runs
        .iter()
        .map(storlab_results::comparison::RunFigures::of_stored)
        .collect();
    headline(runs, &crate::model::group_runs(&figures))
}

/// The headline of stored runs grouped by step.
pub fn headline(runs: &[StoredRun], groups: &[Group]) -> Headline {
    let mut h = Headline::default();
    if !storlab_results::raid::tables(runs).is_empty() {
        return h;
    }
    // A training study's own table first: per model and target, the most accelerators that
    // met the AU rule (none met it: 0), and their figures.
    for (model, target, best) in crate::training::best_results(runs) {
        let values = match best {
            Some(r) => vec![
                Some(f64::from(r.accelerators)),
                Some(r.au_percent().0 / 100.0),
                Some(r.samples_per_second()),
                Some(r.bytes_per_second()),
            ],
            None => vec![Some(0.0), None, None, None],
        };
        let row = Row {
            step: String::new(),
            test: model,
            target,
            values,
            previous: None,
        };
        push_row(&mut h, TRAINING, row);
    }
    for g in groups {
        // A file server's shares: its total per test, not a row per share.
        if let Some(rows) = crate::headline::fileserver::headline_rows(g, runs) {
            for row in rows {
                push_row(&mut h, FILE_SERVER, row);
            }
            continue;
        }
        for p in &g.points {
            let Some(run) = point_run(g, p, runs) else {
                continue;
            };
            if run.summary.schedule.is_some() {
                continue;
            }
            let Some(t) = run.summary.targets.get(p.figures.target_position) else {
                continue;
            };
            // Its accelerators' figures are in the training table.
            if t.workload_type == ResultKind::Training {
                continue;
            }
            let workload = run.workload_json(p.figures.target_position);
            let title = match t.workload_type {
                ResultKind::Block => STORAGE,
                ResultKind::DbBench => KEY_VALUE,
                ResultKind::YcsbRun => YCSB,
                ResultKind::YcsbLoad
                | ResultKind::Pgbench
                | ResultKind::Training
                | ResultKind::Checkpoint
                | ResultKind::Unknown => OTHER,
            };
            let f = &p.figures;
            let values = match title {
                STORAGE | OTHER => vec![
                    Some(f.rate_ops),
                    Some(f.rate_bytes),
                    Some(f.p99_latency_ns as f64),
                ],
                KEY_VALUE => vec![Some(f.rate_ops), Some(f.p99_latency_ns as f64)],
                _ => vec![
                    Some(f.measured_seconds),
                    Some(f.rate_ops),
                    kind_mean(g, p, runs, "read"),
                    kind_mean(g, p, runs, "update"),
                ],
            };
            let test = match title {
                STORAGE => workload
                    .map(block_label)
                    .unwrap_or_else(|| step_label(g, p)),
                KEY_VALUE => kv_label(g, p, workload),
                _ => step_label(g, p),
            };
            let row = Row {
                step: g.step.clone(),
                test,
                target: p.series.clone(),
                values,
                previous: None,
            };
            push_row(&mut h, title, row);
        }
    }
    // The brief's own table first: throughput of anything else (a YCSB load) comes after.
    h.sections.sort_by_key(|s| s.title == OTHER);
    // The same test on the same target from two steps: the step names tell them apart.
    for s in &mut h.sections {
        let keys: Vec<(String, String)> = s
            .rows
            .iter()
            .map(|r| (r.test.clone(), r.target.clone()))
            .collect();
        for (i, r) in s.rows.iter_mut().enumerate() {
            if keys.iter().filter(|k| **k == keys[i]).count() > 1 {
                r.test = format!("{} ({})", r.test, r.step);
            }
        }
    }
    h
}

/// Adds a row to its section (made when first needed).
fn push_row(h: &mut Headline, title: &'static str, row: Row) {
    match h.sections.iter_mut().find(|s| s.title == title) {
        Some(s) => s.rows.push(row),
        None => h.sections.push(Section {
            title,
            metrics: metrics_of(title),
            rows: vec![row],
        }),
    }
}

/// The first stored run of a point.
fn point_run<'a>(g: &Group, p: &Point, runs: &'a [StoredRun]) -> Option<&'a StoredRun> {
    let first = *p.figures.run_indexes.first()?;
    g.runs
        .iter()
        .map(|&i| &runs[i])
        .find(|r| r.summary.run_index == first)
}

/// The mean latency of one operation kind at a point: the runs' means weighted by their
/// operations (`None` when the point has no operation of that kind).
fn kind_mean(g: &Group, p: &Point, runs: &[StoredRun], kind: &str) -> Option<f64> {
    let (mut sum, mut ops) = (0.0, 0u64);
    for &i in &g.runs {
        let s = &runs[i].summary;
        if !p.figures.run_indexes.contains(&s.run_index) {
            continue;
        }
        for t in s.targets.iter().filter(|t| t.name == p.figures.target) {
            if let Some(k) = t.kinds.get(kind).filter(|k| k.ops > 0) {
                sum += k.service_latency.mean_ns * k.ops as f64;
                ops += k.ops;
            }
        }
    }
    (ops > 0).then(|| sum / ops as f64)
}

/// `seq-read, threads=4`, or the step alone when nothing is swept.
fn step_label(g: &Group, p: &Point) -> String {
    match &g.x_param {
        Some(x) => format!("{}, {}", g.step, x_text(x, &p.x)),
        None => g.step.clone(),
    }
}

fn x_text(param: &str, value: &str) -> String {
    match param {
        "threads" => format!("{value} thread{}", if value == "1" { "" } else { "s" }),
        "queue-depth" => format!("QD {value}"),
        p => format!("{p}={value}"),
    }
}

/// `random 4KiB read, QD 32` from a resolved block workload.
pub(crate) fn block_label(w: &serde_json::Value) -> String {
    let access = w.get("access").and_then(|v| v.as_str()).unwrap_or("?");
    let size = w
        .get("block-size")
        .and_then(|v| v.as_u64())
        .map(format_bytes)
        .unwrap_or_default();
    let share = w.get("read-share").and_then(|v| v.as_f64()).unwrap_or(1.0);
    let what = if share >= 1.0 {
        "read".to_string()
    } else if share <= 0.0 {
        "write".to_string()
    } else {
        format!("{:.0}% read", share * 100.0)
    };
    let qd = w.get("queue-depth").and_then(|v| v.as_u64()).unwrap_or(1);
    let threads = w.get("threads").and_then(|v| v.as_u64()).unwrap_or(1);
    let mut s = format!("{access} {size} {what}, QD {qd}");
    if threads > 1 {
        s.push_str(&format!(", {threads} threads"));
    }
    s
}

/// `readrandom, 16 threads` from a db_bench workload and the point's thread count.
fn kv_label(g: &Group, p: &Point, w: Option<&serde_json::Value>) -> String {
    let Some(bench) = w.and_then(|w| w.get("benchmark")).and_then(|v| v.as_str()) else {
        return step_label(g, p);
    };
    let threads = w
        .and_then(|w| w.get("threads"))
        .and_then(|v| v.as_u64())
        .unwrap_or(1);
    format!(
        "{bench}, {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    )
}

impl Headline {
    /// Puts `previous`'s figures beside the same test and target's.
    pub fn with_previous(mut self, previous: &Headline, what: &str) -> Headline {
        for s in &mut self.sections {
            let before = previous.sections.iter().find(|p| p.title == s.title);
            for r in &mut s.rows {
                r.previous = Some(
                    before
                        .and_then(|b| {
                            b.rows
                                .iter()
                                .find(|x| x.test == r.test && x.target == r.target)
                        })
                        .map(|x| x.values.clone())
                        .unwrap_or_else(|| vec![None; r.values.len()]),
                );
            }
        }
        self.compared_with = Some(what.to_string());
        self
    }

    pub fn is_empty(&self) -> bool {
        self.sections.iter().all(|s| s.rows.is_empty())
    }

    /// One table per section: test, target, then per metric its figure (and, compared, the
    /// earlier figure and the change).
    pub fn tables(&self) -> Vec<(&'static str, Table)> {
        self.sections
            .iter()
            .map(|s| (s.title, section_table(s)))
            .collect()
    }

    /// The terminal's text: per section a title and an aligned table.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(w) = &self.compared_with {
            out.push_str(&format!("compared with: {w}\n"));
        }
        for (title, t) in self.tables() {
            let header: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
            let rows: Vec<Vec<String>> = t
                .rows
                .iter()
                .map(|r| r.cells.iter().map(|c| c.shown.clone()).collect())
                .collect();
            out.push_str(&format!(
                "{title}\n{}\n",
                crate::table::render(&header, &rows)
            ));
        }
        out
    }
}

/// `+12.3%` (this against the earlier figure), or `-` when either is missing or zero.
pub fn change(now: Option<f64>, before: Option<f64>) -> Option<f64> {
    match (now, before) {
        (Some(n), Some(b)) if b != 0.0 && n.is_finite() && b.is_finite() => Some(n / b - 1.0),
        _ => None,
    }
}

/// The distinct targets of a section, in row order, when it can be laid out side by side:
/// more than one target, no comparison, and each test on each target once.
fn side_by_side(s: &Section) -> Option<Vec<&str>> {
    if s.rows.iter().any(|r| r.previous.is_some()) {
        return None;
    }
    let mut targets: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !targets.contains(&r.target.as_str()) {
            targets.push(&r.target);
        }
    }
    let once = s.rows.iter().enumerate().all(|(i, r)| {
        !s.rows[..i]
            .iter()
            .any(|x| x.test == r.test && x.target == r.target)
    });
    (targets.len() > 1 && once).then_some(targets)
}

fn figure_cell(unit: Unit, v: Option<f64>) -> Cell {
    match v {
        Some(v) => Cell {
            shown: unit.show(v),
            value: Some(v),
        },
        None => Cell {
            shown: "-".into(),
            value: None,
        },
    }
}

/// Several targets side by side, as the published briefs lay them out: a row per test, and
/// per target its figures (`ssd-a ops/s`, `ssd-a p99`, ...); a test a target did not run
/// shows `-`.
fn side_by_side_table(s: &Section, targets: &[&str]) -> Table {
    let mut columns = vec![("test".to_string(), false)];
    for t in targets {
        for m in &s.metrics {
            columns.push((format!("{t} {}", m.name), true));
        }
    }
    let mut tests: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !tests.contains(&r.test.as_str()) {
            tests.push(&r.test);
        }
    }
    let rows = tests
        .iter()
        .map(|test| {
            let mut cells = vec![Cell {
                shown: test.to_string(),
                value: None,
            }];
            for t in targets {
                let row = s.rows.iter().find(|r| r.test == *test && r.target == *t);
                for (i, m) in s.metrics.iter().enumerate() {
                    let v = row.and_then(|r| r.values.get(i).copied().flatten());
                    cells.push(figure_cell(m.unit, v));
                }
            }
            TableRow {
                keys: vec![("test", test.to_string())],
                cells,
            }
        })
        .collect();
    Table { columns, rows }
}

fn section_table(s: &Section) -> Table {
    if let Some(targets) = side_by_side(s) {
        return side_by_side_table(s, &targets);
    }
    let compared = s.rows.iter().any(|r| r.previous.is_some());
    let mut columns = vec![("test".to_string(), false), ("target".to_string(), false)];
    for m in &s.metrics {
        columns.push((m.name.to_string(), true));
        if compared {
            columns.push((format!("{} before", m.name), true));
            columns.push(("change".to_string(), true));
        }
    }
    let cell = figure_cell;
    let rows = s
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                Cell {
                    shown: r.test.clone(),
                    value: None,
                },
                Cell {
                    shown: r.target.clone(),
                    value: None,
                },
            ];
            for (i, m) in s.metrics.iter().enumerate() {
                let now = r.values.get(i).copied().flatten();
                cells.push(cell(m.unit, now));
                if let Some(prev) = &r.previous {
                    let before = prev.get(i).copied().flatten();
                    cells.push(cell(m.unit, before));
                    let c = change(now, before);
                    cells.push(Cell {
                        shown: c
                            .map(|c| format!("{:+.1}%", c * 100.0))
                            .unwrap_or_else(|| "-".into()),
                        value: c,
                    });
                }
            }
            TableRow {
                keys: vec![("test", r.test.clone()), ("target", r.target.clone())],
                cells,
            }
        })
        .collect();
    Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(values: &[(&str, f64)]) -> Headline {
        Headline {
            sections: vec![Section {
                title: KEY_VALUE,
                metrics: metrics_of(KEY_VALUE),
                rows: values
                    .iter()
                    .map(|(t, v)| Row {
                        step: "s".into(),
                        test: t.to_string(),
                        target: "kv".into(),
                        values: vec![Some(*v), Some(1000.0)],
                        previous: None,
                    })
                    .collect(),
            }],
            compared_with: None,
        }
    }

    #[test]
    fn compared_rows_carry_the_earlier_figure_and_the_change() {
        let now = section(&[("readrandom, 1 thread", 1500.0), ("new test", 10.0)]);
        let before = section(&[("readrandom, 1 thread", 1000.0)]);
        let h = now.with_previous(&before, "brief-1");
        let t = &h.tables()[0].1;
        let names: Vec<&str> = t.columns.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "test",
                "target",
                "ops/s",
                "ops/s before",
                "change",
                "p99",
                "p99 before",
                "change"
            ]
        );
        let shown: Vec<&str> = t.rows[0].cells.iter().map(|c| c.shown.as_str()).collect();
        assert_eq!(&shown[2..5], ["1,500", "1,000", "+50.0%"]);
        assert_eq!(&shown[6..8], ["1.0 µs", "+0.0%"]);
        // A test the earlier result did not have: no figure, no change.
        let shown: Vec<&str> = t.rows[1].cells.iter().map(|c| c.shown.as_str()).collect();
        assert_eq!(&shown[3..5], ["-", "-"]);
        assert!(h.text().starts_with("compared with: brief-1\nKey-value\n"));
    }

    #[test]
    fn several_targets_sit_side_by_side_a_row_per_test() {
        let row = |test: &str, target: &str, v: f64| Row {
            step: "s".into(),
            test: test.into(),
            target: target.into(),
            values: vec![Some(v), Some(2000.0)],
            previous: None,
        };
        let s = Section {
            title: KEY_VALUE,
            metrics: metrics_of(KEY_VALUE),
            rows: vec![
                row("readrandom, 8 threads", "ssd-a", 100.0),
                row("readrandom, 8 threads", "ssd-b", 200.0),
                row("readrandom, 16 threads", "ssd-b", 300.0),
            ],
        };
        let t = section_table(&s);
        let names: Vec<&str> = t.columns.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "test",
                "ssd-a ops/s",
                "ssd-a p99",
                "ssd-b ops/s",
                "ssd-b p99"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        let shown =
            |r: usize| -> Vec<&str> { t.rows[r].cells.iter().map(|c| c.shown.as_str()).collect() };
        assert_eq!(
            shown(0),
            ["readrandom, 8 threads", "100", "2.0 µs", "200", "2.0 µs"]
        );
        // A test one target did not run: its figures are missing, not zero.
        assert_eq!(
            shown(1),
            ["readrandom, 16 threads", "-", "-", "300", "2.0 µs"]
        );
        assert_eq!(t.rows[1].cells[1].value, None);
    }

    /// A stored YCSB run phase, as `storlab run` writes it (`workload-type = "ycsb-run"`).
    fn ycsb_run(index: usize, step: &str, workload_type: ResultKind) -> StoredRun {
        let mut s = storlab_results::fixtures::summary(index, step, &[], &[]);
        s.measured_seconds = 4.0;
        let mut t = storlab_results::summary::TargetResult {
            name: "mongodb".into(),
            target_type: "mongodb".into(),
            workload: step.into(),
            workload_type,
            threads: 4,
            ops: 400,
            rate_ops: 100.0,
            ..Default::default()
        };
        for (kind, mean_ns) in [("read", 1000.0), ("update", 3000.0)] {
            let mut k = storlab_results::summary::KindResult {
                ops: 200,
                ..Default::default()
            };
            k.service_latency.mean_ns = mean_ns;
            t.kinds.insert(kind.into(), k);
        }
        s.targets = vec![t];
        StoredRun::of_summary(s)
    }

    #[test]
    fn a_stored_ycsb_run_phase_gets_the_ycsb_briefs_four_metrics() {
        let runs = vec![
            ycsb_run(1, "load", ResultKind::YcsbLoad),
            ycsb_run(2, "workload-a", ResultKind::YcsbRun),
        ];
        let h = of_runs(&runs);
        assert_eq!(h.sections[0].title, YCSB, "the brief's table first: {h:#?}");
        let ycsb = h
            .sections
            .iter()
            .find(|s| s.title == YCSB)
            .unwrap_or_else(|| panic!("no YCSB section in {h:#?}"));
        // The run phase is the brief's table; the load phase is not one of its rows.
        assert_eq!(ycsb.rows.len(), 1, "{ycsb:#?}");
        assert_eq!(ycsb.rows[0].step, "workload-a");
        assert_eq!(
            ycsb.rows[0].values,
            [Some(4.0), Some(100.0), Some(1000.0), Some(3000.0)]
        );
    }

    #[test]
    fn run_times_read_as_the_brief_words_them() {
        assert_eq!(Unit::Seconds.show(65_988.0), "18.33 h");
        assert_eq!(Unit::Seconds.show(750.0), "12.5 min");
        assert_eq!(Unit::Seconds.show(4.0), "4.00 s");
    }

    #[test]
    fn block_labels_say_access_size_direction_and_depth() {
        let w = serde_json::json!({"access": "random", "block-size": 4096, "read-share": 1.0,
            "queue-depth": 32, "threads": 1});
        assert_eq!(block_label(&w), "random 4KiB read, QD 32");
        let w = serde_json::json!({"access": "sequential", "block-size": 1048576,
            "read-share": 0.7, "queue-depth": 8, "threads": 2});
        assert_eq!(block_label(&w), "sequential 1MiB 70% read, QD 8, 2 threads");
    }
}
