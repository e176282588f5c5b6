//! Tables: the terminal table of one run (per target and operation kind, and the total), the
//! aligned-text renderer, and the one results-table model (rows per run, target and operation
//! kind; columns with the text shown and the stored value) that the HTML, Markdown and CSV
//! reports render.

use storlab_model::op::ResultKind;
use storlab_model::units::format_ns;
use storlab_record::summary::LatencySummary;
use storlab_results::comparison::parameters_text;
use storlab_results::summary::{KindResult, RunSummary, TargetResult};

pub const HEADER: [&str; 12] = [
    "target", "op", "ops", "ops/s", "MB/s", "mean", "p50", "p95", "p99", "p99.9", "max", "errors",
];

fn row(target: &str, op: &str, k: &KindResult) -> Vec<String> {
    let l = &k.service_latency;
    vec![
        target.to_string(),
        op.to_string(),
        k.ops.to_string(),
        format!("{:.0}", k.rate_ops),
        format!("{:.1}", k.rate_bytes / 1e6),
        format_ns(l.mean_ns),
        format_ns(l.p50_ns as f64),
        format_ns(l.p95_ns as f64),
        format_ns(l.p99_ns as f64),
        format_ns(l.p99_9_ns as f64),
        format_ns(l.max_ns as f64),
        k.errors.to_string(),
    ]
}

/// Rows of a summary: one per target and kind, one per target (all kinds) when it has several
/// kinds, and the total when there are several targets.
pub fn rows(s: &RunSummary) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            rows.push(row(&t.name, op, k));
            if let Some(il) = &k.intended_latency {
                let mut r = row(&t.name, &format!("{op} (from intended start)"), k);
                r[5] = format_ns(il.mean_ns);
                r[6] = format_ns(il.p50_ns as f64);
                r[7] = format_ns(il.p95_ns as f64);
                r[8] = format_ns(il.p99_ns as f64);
                r[9] = format_ns(il.p99_9_ns as f64);
                r[10] = format_ns(il.max_ns as f64);
                rows.push(r);
            }
        }
        if t.kinds.len() > 1 {
            rows.push(row(&t.name, "all", &as_kind(t)));
        }
    }
    if s.targets.len() > 1 {
        rows.push(row("total", "all", &as_kind(&s.total)));
    }
    // Background workers (readwhilewriting's writer), apart from the targets' figures.
    for b in &s.background {
        for (op, k) in &b.kinds {
            rows.push(row(&format!("{} (background)", b.name), op, k));
        }
    }
    rows
}

/// Key-value reads that found nothing, per target: `(target, found, total)` for kinds with
/// misses or reads (db_bench's "N of M found").
pub fn found_lines(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            if t.block_bytes == 0 && (op == "read" || op == "read-modify-write") {
                out.push(format!(
                    "{} {op}: {} of {} found",
                    t.name,
                    k.ops - k.misses,
                    k.ops
                ));
            }
        }
    }
    out
}

/// The YCSB brief's figures for a run phase, per target: run time (the measured time),
/// throughput (every finished operation over it, as YCSB counts), and the average read and
/// update latency (service time).
pub fn ycsb_lines(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        if t.workload_type != ResultKind::YcsbRun {
            continue;
        }
        let all = t.ops + t.errors;
        let mut line = format!(
            "{} ycsb: run time {:.3} s, throughput {:.2} ops/s",
            t.name,
            s.measured_seconds,
            all as f64 / s.measured_seconds.max(1e-9)
        );
        for op in ["read", "update", "insert", "scan", "read-modify-write"] {
            if let Some(k) = t.kinds.get(op) {
                line.push_str(&format!(
                    ", average {op} latency {}",
                    format_ns(k.service_latency.mean_ns)
                ));
            }
        }
        out.push(line);
    }
    out
}

fn as_kind(t: &storlab_results::summary::TargetResult) -> KindResult {
    KindResult {
        ops: t.ops,
        bytes: t.bytes,
        misses: t.kinds.values().map(|k| k.misses).sum(),
        rate_ops: t.rate_ops,
        rate_bytes: t.rate_bytes,
        errors: t.errors,
        errors_by_kind: Default::default(),
        service_latency: t.service_latency.clone(),
        intended_latency: t.intended_latency.clone(),
    }
}

/// Renders aligned text columns.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = widths[i] - c.chars().count();
                if i < 2 {
                    format!("{c}{}", " ".repeat(pad))
                } else {
                    format!("{}{c}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// Thousands separators: `616,344`.
pub fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 && s != "0" {
        format!("-{out}")
    } else {
        out
    }
}

/// One row of the results table: a run's target and operation kind (or `all` of a target's
/// kinds when it has several).
pub struct ResultRow<'a> {
    pub summary: &'a RunSummary,
    pub target: &'a TargetResult,
    pub op: &'a str,
    pub ops: u64,
    pub bytes: u64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub errors: u64,
    pub latency: &'a LatencySummary,
}

/// The results-table rows of a run, in target order: each kind, then `all` for a target with
/// several kinds.
pub fn result_rows(s: &RunSummary) -> Vec<ResultRow<'_>> {
    let mut rows = Vec::new();
    for t in &s.targets {
        for (op, k) in &t.kinds {
            rows.push(ResultRow {
                summary: s,
                target: t,
                op,
                ops: k.ops,
                bytes: k.bytes,
                rate_ops: k.rate_ops,
                rate_bytes: k.rate_bytes,
                errors: k.errors,
                latency: &k.service_latency,
            });
        }
        if t.kinds.len() > 1 {
            rows.push(ResultRow {
                summary: s,
                target: t,
                op: "all",
                ops: t.ops,
                bytes: t.bytes,
                rate_ops: t.rate_ops,
                rate_bytes: t.rate_bytes,
                errors: t.errors,
                latency: &t.service_latency,
            });
        }
    }
    rows
}

/// A shown cell: its text and, for a figure, the stored value it shows.
pub struct Cell {
    pub shown: String,
    pub value: Option<f64>,
}

impl Cell {
    /// A cell of text (no figure behind it).
    pub fn text(s: impl Into<String>) -> Cell {
        Cell {
            shown: s.into(),
            value: None,
        }
    }

    /// A figure shown with `digits` decimals.
    pub fn num(v: f64, digits: usize) -> Cell {
        Cell {
            shown: format!("{v:.digits$}"),
            value: Some(v),
        }
    }
}

/// A column of the shown results table.
pub struct Column {
    pub name: &'static str,
    /// Right-aligned (a number).
    pub numeric: bool,
    pub cell: fn(&ResultRow) -> Cell,
}

fn text(s: impl Into<String>) -> Cell {
    Cell {
        shown: s.into(),
        value: None,
    }
}

fn figure(shown: String, value: f64) -> Cell {
    Cell {
        shown,
        value: Some(value),
    }
}

fn latency(v: f64) -> Cell {
    figure(format_ns(v), v)
}

/// The columns of the shown results table (HTML and Markdown); with the step's name when the
/// table holds several steps.
pub fn result_columns(with_step: bool) -> Vec<Column> {
    let mut c = vec![Column {
        name: "run",
        numeric: true,
        cell: |r| text(r.summary.run_index.to_string()),
    }];
    if with_step {
        c.push(Column {
            name: "step",
            numeric: false,
            cell: |r| text(r.summary.step.clone()),
        });
    }
    c.extend([
        Column {
            name: "parameters",
            numeric: false,
            cell: |r| {
                let p = parameters_text(&r.summary.parameters);
                text(if p.is_empty() { "-".to_string() } else { p })
            },
        },
        Column {
            name: "target",
            numeric: false,
            cell: |r| text(r.target.name.clone()),
        },
        Column {
            name: "op",
            numeric: false,
            cell: |r| text(r.op),
        },
        Column {
            name: "ops",
            numeric: true,
            cell: |r| figure(r.ops.to_string(), r.ops as f64),
        },
        Column {
            name: "ops/s",
            numeric: true,
            cell: |r| figure(thousands(r.rate_ops), r.rate_ops),
        },
        Column {
            name: "MB/s",
            numeric: true,
            cell: |r| figure(format!("{:.1}", r.rate_bytes / 1e6), r.rate_bytes / 1e6),
        },
        Column {
            name: "mean",
            numeric: true,
            cell: |r| latency(r.latency.mean_ns),
        },
        Column {
            name: "p50",
            numeric: true,
            cell: |r| latency(r.latency.p50_ns as f64),
        },
        Column {
            name: "p95",
            numeric: true,
            cell: |r| latency(r.latency.p95_ns as f64),
        },
        Column {
            name: "p99",
            numeric: true,
            cell: |r| latency(r.latency.p99_ns as f64),
        },
        Column {
            name: "p99.9",
            numeric: true,
            cell: |r| latency(r.latency.p99_9_ns as f64),
        },
        Column {
            name: "max",
            numeric: true,
            cell: |r| latency(r.latency.max_ns as f64),
        },
        Column {
            name: "errors",
            numeric: true,
            cell: |r| figure(r.errors.to_string(), r.errors as f64),
        },
        Column {
            name: "status",
            numeric: false,
            cell: |r| text(r.summary.status.name()),
        },
    ]);
    c
}

/// A table as every report format renders it: column names (and whether each is a number),
/// rows of cells, and per row the keys that identify it (HTML `data-` attributes).
pub struct Table {
    pub columns: Vec<(String, bool)>,
    pub rows: Vec<TableRow>,
}

pub struct TableRow {
    /// `("run", "3")` becomes `data-run="3"` in HTML.
    pub keys: Vec<(&'static str, String)>,
    pub cells: Vec<Cell>,
}

/// The results table of some runs: one row per run, target and kind.
pub fn results_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>, with_step: bool) -> Table {
    let cols = result_columns(with_step);
    let mut rows = Vec::new();
    for s in runs {
        for r in result_rows(s) {
            rows.push(TableRow {
                keys: vec![
                    ("run", s.run_index.to_string()),
                    ("target", r.target.name.clone()),
                    ("op", r.op.to_string()),
                ],
                cells: cols.iter().map(|c| (c.cell)(&r)).collect(),
            });
        }
    }
    Table {
        columns: cols
            .iter()
            .map(|c| (c.name.to_string(), c.numeric))
            .collect(),
        rows,
    }
}

/// The combined points of a group whose points have repetitions: ops/s and p99 of each point
/// (repetitions merged by histograms) with the spread between its repetitions beside.
pub fn points_table(g: &crate::model::Group) -> Option<Table> {
    use storlab_results::comparison::LatencyFrom;
    if !g.has_repetitions() {
        return None;
    }
    let x_name = g.x_param.clone().unwrap_or_else(|| "point".into());
    let columns = [
        (x_name.as_str(), false),
        ("series", false),
        ("repetitions", true),
        ("ops/s", true),
        ("ops/s min", true),
        ("ops/s max", true),
        ("p99", true),
        ("p99 min", true),
        ("p99 max", true),
        ("latency from", false),
    ]
    .map(|(n, num)| (n.to_string(), num))
    .to_vec();
    let rows = g
        .points
        .iter()
        .map(|p| {
            let f = &p.figures;
            let (rmin, rmax, pmin, pmax) = match &f.spread {
                Some(s) => (
                    figure(thousands(s.rate_ops_min), s.rate_ops_min),
                    figure(thousands(s.rate_ops_max), s.rate_ops_max),
                    latency(s.p99_latency_ns_min as f64),
                    latency(s.p99_latency_ns_max as f64),
                ),
                None => (text("-"), text("-"), text("-"), text("-")),
            };
            let from = match f.latency_from {
                LatencyFrom::MergedHistograms => "merged histograms",
                LatencyFrom::RunSummary => "run summary",
                LatencyFrom::WorstRepetition => "WORST repetition (histograms missing)",
            };
            TableRow {
                keys: vec![("x", p.x.clone()), ("series", p.series.clone())],
                cells: vec![
                    text(p.x.clone()),
                    text(p.series.clone()),
                    figure(f.repetitions.to_string(), f.repetitions as f64),
                    figure(thousands(f.rate_ops), f.rate_ops),
                    rmin,
                    rmax,
                    latency(f.p99_latency_ns as f64),
                    pmin,
                    pmax,
                    text(from),
                ],
            }
        })
        .collect();
    Some(Table { columns, rows })
}

impl Table {
    /// GitHub-flavoured Markdown; `|` in a cell is escaped.
    pub fn markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let mut out = String::from("|");
        for (name, _) in &self.columns {
            out.push_str(&format!(" {} |", cell(name)));
        }
        out.push_str("\n|");
        for (_, numeric) in &self.columns {
            out.push_str(if *numeric { "---:|" } else { "---|" });
        }
        out.push('\n');
        for r in &self.rows {
            out.push('|');
            for c in &r.cells {
                out.push_str(&format!(" {} |", cell(&c.shown)));
            }
            out.push('\n');
        }
        out
    }

    /// Terminal text of a table of one run, its first column (the run) left out.
    pub fn text_of_one_run(&self) -> String {
        let header: Vec<&str> = self
            .columns
            .iter()
            .skip(1)
            .map(|(n, _)| n.as_str())
            .collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.cells.iter().skip(1).map(|c| c.shown.clone()).collect())
            .collect();
        render(&header, &rows)
    }
}

/// What the targets' sessions actually used (how operations overlapped, kernel features and
/// fallbacks), one row per distinct (target, what, value) with the runs it applies to:
/// [target, what, value, runs].
pub fn session_used_rows(runs: &[&RunSummary]) -> Vec<[String; 4]> {
    let mut rows: Vec<[String; 4]> = Vec::new();
    for s in runs {
        for t in &s.targets {
            for (k, v) in &t.session_used {
                let run = s.run_index.to_string();
                match rows
                    .iter_mut()
                    .find(|r| r[0] == t.name && r[1] == *k && r[2] == *v)
                {
                    Some(r) => {
                        r[3].push_str(", ");
                        r[3].push_str(&run);
                    }
                    None => rows.push([t.name.clone(), k.clone(), v.clone(), run]),
                }
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(616_344.0), "616,344");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1_000.0), "1,000");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(-1234.0), "-1,234");
    }

    #[test]
    fn one_row_per_kind_and_all_for_several() {
        let mut s = storlab_results::fixtures::summary(3, "w", &[], &[("a", 10.0, 5)]);
        for op in ["read", "write"] {
            s.targets[0].kinds.insert(op.into(), KindResult::default());
        }
        let rows = result_rows(&s);
        let ops: Vec<&str> = rows.iter().map(|r| r.op).collect();
        assert_eq!(ops, ["read", "write", "all"]);
        let cols = result_columns(false);
        let cells: Vec<Cell> = cols.iter().map(|c| (c.cell)(&rows[2])).collect();
        assert_eq!(cells.len(), 15);
        assert_eq!(cells.iter().filter(|c| c.value.is_some()).count(), 10);
        assert_eq!(
            (cells[0].shown.as_str(), cells[1].shown.as_str()),
            ("3", "-")
        );
        assert_eq!(cells[5].value, Some(10.0));
    }
}
