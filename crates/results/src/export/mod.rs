//! `storlab results export`: a lab's history as one table for notebooks (pandas, Polars,
//! DuckDB), in CSV or Parquet. Read through the results store's public methods (`list`,
//! `summary`, `folder`) and the stored-run loaders only, whatever backend holds the index.
//!
//! - `runs`: one row per stored run: its identity (`run_id`, `study`, `step`, `run_index`,
//!   `run_count`, `repetition`, `status`, `started_at`, `ended_at` (timestamps in Parquet,
//!   RFC 3339 in CSV), `warmup_seconds`, `measured_seconds`), where and by what it was made
//!   (`host`, `storlab_version`, `storlab_git_commit`, from its `system.json`), one
//!   `param_KEY` column per sweep parameter found in any run (integers or numbers when every
//!   value is one, else the text the study wrote; null where a run has no such parameter), the
//!   totals over all targets (`ops`, `bytes`, `errors`, `rate_ops`, `rate_mb_s`,
//!   `mean_latency_ns`, `p50`, `p90`, `p95`, `p99`, `p999`, `p9999` and `max_latency_ns`, and
//!   the same from each operation's intended start as `intended_*`, null in closed loop), then
//!   each target's `TARGET.target_type` and the same figures per target and operation as
//!   `TARGET.OPERATION.MEASURE`. A run without a stored summary (running, interrupted,
//!   incomplete) has its identity and parameters, its figures null.
//! - `intervals`: one row per timeline interval, target and operation of every run whose
//!   folder holds its summary and timeline: the run's identity and parameters, `second` (the
//!   interval's index, negative in warm-up), `phase` (`warmup` or `measure`), `end_s`
//!   (seconds from the start of measurement to the interval's end: the nominal interval
//!   times its index plus one, the last measured one cut at `measured_seconds`),
//!   `interval_s` (its real length; null in timelines that predate it), `target`,
//!   `target_type`, `operation`, `ops`, `errors`, `rate_ops`, `rate_mb_s`, `p50_latency_ns`,
//!   `p99_latency_ns`, `max_latency_ns`, `client_cpu_cores`.
//!
//! MB/s are 10^6 bytes per second (`rate_mb_s` = the summary's `rate-bytes` / 1e6).

pub mod parquet;
pub mod table;

use std::collections::BTreeMap;

use crate::store::{RunRow, Store, StoreError};
use crate::stored::{LoadError, load_run_by_id, read_run_folder};
use crate::summary::{KindResult, RunSummary, TargetResult};
use storlab_record::summary::LatencySummary;
use table::{Kind, Table};

/// Which rows to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportKind {
    /// One row per run.
    Runs,
    /// One row per timeline interval, target and operation of each run.
    Intervals,
}

/// The file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Parquet,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: writing Parquet: {message}")]
    Parquet {
        path: std::path::PathBuf,
        message: String,
    },
}

/// The table of `kind` over every run of the store, oldest first.
pub fn export_table(store: &Store, kind: ExportKind) -> Result<Table, ExportError> {
    let rows = store.list()?;
    // A run without a stored summary (still running, interrupted, incomplete) has none.
    let mut runs: Vec<(RunRow, Option<RunSummary>)> = Vec::with_capacity(rows.len());
    for row in rows {
        let summary = match store.summary(&row.run_id) {
            Ok(s) => Some(s),
            Err(StoreError::NoSuchRun(_)) => None,
            Err(e) => return Err(e.into()),
        };
        runs.push((row, summary));
    }
    let keys = parameter_kinds(&runs);
    let mut table = Table::default();
    for (row, summary) in &runs {
        let context = Context::of(store, row)?;
        let id = Identity {
            row,
            summary: summary.as_ref(),
            keys: &keys,
            context: &context,
        };
        match kind {
            ExportKind::Runs => {
                table.push_row();
                identity(&mut table, &id);
                if let Some(s) = summary {
                    run_figures(&mut table, s);
                }
            }
            ExportKind::Intervals => {
                if summary.is_some() {
                    intervals(&mut table, store, &id)?;
                }
            }
        }
    }
    Ok(table)
}

/// Every sweep parameter's name and what its values are: integers when all are, else
/// numbers when all are, else text.
fn parameter_kinds(runs: &[(RunRow, Option<RunSummary>)]) -> BTreeMap<String, Kind> {
    let mut kinds: BTreeMap<String, Kind> = BTreeMap::new();
    for (row, s) in runs {
        for (k, v) in parameters(row, s.as_ref()) {
            let this = if v.parse::<i64>().is_ok() {
                Kind::Int
            } else if v.parse::<f64>().is_ok_and(f64::is_finite) {
                Kind::Float
            } else {
                Kind::Text
            };
            let merged = match (kinds.get(&k), this) {
                (None, k) => k,
                (Some(Kind::Int), Kind::Int) => Kind::Int,
                (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
                _ => Kind::Text,
            };
            kinds.insert(k, merged);
        }
    }
    kinds
}

/// Where and by what a run was made: from its system capture (`system.json`), in its folder
/// or, for a shared store's run made elsewhere, in the store.
#[derive(Debug, Default)]
struct Context {
    host: Option<String>,
    storlab_version: Option<String>,
    storlab_git_commit: Option<String>,
}

impl Context {
    fn of(store: &Store, row: &RunRow) -> Result<Context, ExportError> {
        let folder = std::path::Path::new(&row.folder);
        let system = if folder.join("system.json").exists() {
            crate::stored::read_system(folder)?
        } else if store.is_shared() {
            store
                .file(&row.run_id, "system.json")?
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        } else {
            None
        };
        Ok(
            system.map_or_else(Context::default, |s: crate::system::SystemInfo| Context {
                host: s.hostname,
                storlab_version: Some(s.storlab_version),
                storlab_git_commit: s.storlab_git_commit,
            }),
        )
    }
}

/// What identifies a run in each of its rows.
struct Identity<'a> {
    row: &'a RunRow,
    summary: Option<&'a RunSummary>,
    /// Every run's parameter names and kinds, so that all tables have the same columns in
    /// the same order.
    keys: &'a BTreeMap<String, Kind>,
    context: &'a Context,
}

/// A run's sweep parameters: the summary's, else the store's `key=value` text.
fn parameters(row: &RunRow, summary: Option<&RunSummary>) -> Vec<(String, String)> {
    match summary {
        Some(s) => s
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        None => row
            .parameters
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// The run's identity, context and parameters, in the last row.
fn identity(t: &mut Table, id: &Identity<'_>) {
    let (row, summary) = (id.row, id.summary);
    t.text("run_id", &row.run_id);
    t.text("study", &row.study);
    t.text("step", &row.step);
    t.int("run_index", row.run_index);
    t.int("run_count", row.run_count);
    t.declare("repetition", Kind::Int);
    if let Some(s) = summary {
        t.int("repetition", i64::from(s.repetition));
    }
    t.text("status", &row.status);
    t.timestamp("started_at", &row.started_at);
    for (name, value) in [
        ("host", &id.context.host),
        ("storlab_version", &id.context.storlab_version),
        ("storlab_git_commit", &id.context.storlab_git_commit),
    ] {
        t.declare(name, Kind::Text);
        if let Some(v) = value {
            t.text(name, v);
        }
    }
    let params = parameters(row, summary);
    for (k, kind) in id.keys {
        let name = format!("param_{k}");
        t.declare(&name, *kind);
        if let Some((_, v)) = params.iter().find(|(p, _)| p == k) {
            t.value(&name, *kind, v);
        }
    }
}

/// A run's totals, then each target's and operation's figures.
fn run_figures(t: &mut Table, s: &RunSummary) {
    t.timestamp("ended_at", &s.ended_at);
    t.float("warmup_seconds", s.warmup_seconds);
    t.float("measured_seconds", s.measured_seconds);
    target_figures(t, "", &s.total);
    for target in &s.targets {
        t.text(&format!("{}.target_type", target.name), &target.target_type);
        for (op, k) in &target.kinds {
            kind_figures(t, &format!("{}.{op}.", target.name), k);
        }
    }
}

fn target_figures(t: &mut Table, prefix: &str, r: &TargetResult) {
    t.count(&format!("{prefix}ops"), r.ops);
    t.count(&format!("{prefix}bytes"), r.bytes);
    t.count(&format!("{prefix}errors"), r.errors);
    t.float(&format!("{prefix}rate_ops"), r.rate_ops);
    t.float(&format!("{prefix}rate_mb_s"), r.rate_bytes / 1e6);
    latency(t, prefix, &r.service_latency, r.intended_latency.as_ref());
}

fn kind_figures(t: &mut Table, prefix: &str, k: &KindResult) {
    t.count(&format!("{prefix}ops"), k.ops);
    t.count(&format!("{prefix}bytes"), k.bytes);
    t.count(&format!("{prefix}errors"), k.errors);
    t.float(&format!("{prefix}rate_ops"), k.rate_ops);
    t.float(&format!("{prefix}rate_mb_s"), k.rate_bytes / 1e6);
    latency(t, prefix, &k.service_latency, k.intended_latency.as_ref());
}

/// The service latency's figures, then (open loop) the same from each operation's intended
/// start as `intended_*` (declared, null, in closed-loop runs).
fn latency(
    t: &mut Table,
    prefix: &str,
    service: &LatencySummary,
    intended: Option<&LatencySummary>,
) {
    for (what, l) in [("", Some(service)), ("intended_", intended)] {
        let figures = |l: &LatencySummary| {
            [
                ("p50", l.p50_ns),
                ("p90", l.p90_ns),
                ("p95", l.p95_ns),
                ("p99", l.p99_ns),
                ("p999", l.p99_9_ns),
                ("p9999", l.p99_99_ns),
                ("max", l.max_ns),
            ]
        };
        let mean = format!("{prefix}{what}mean_latency_ns");
        t.declare(&mean, Kind::Float);
        if let Some(l) = l {
            t.float(&mean, l.mean_ns);
        }
        for (name, _) in figures(&LatencySummary::default()) {
            t.declare(&format!("{prefix}{what}{name}_latency_ns"), Kind::Int);
        }
        if let Some(l) = l {
            for (name, v) in figures(l) {
                t.count(&format!("{prefix}{what}{name}_latency_ns"), v);
            }
        }
    }
}

/// One row per interval, target and operation of the run's stored timeline.
fn intervals(t: &mut Table, store: &Store, id: &Identity<'_>) -> Result<(), ExportError> {
    let (row, summary) = (id.row, id.summary);
    let folder = store.folder(&row.run_id)?;
    let run = if folder.join("summary.json").exists() {
        read_run_folder(&folder)?
    } else if store.is_shared() && summary.is_some() {
        // A shared store's run whose folder is on another machine: from the files it keeps.
        load_run_by_id(store, &row.run_id)?
    } else {
        return Ok(());
    };
    let nominal_s = run.interval_seconds();
    let measured_s = run.summary.measured_seconds;
    for r in &run.timeline.rows {
        t.push_row();
        identity(t, id);
        t.int("second", r.second);
        t.text("phase", if r.measured { "measure" } else { "warmup" });
        let end_s = (r.second + 1) as f64 * nominal_s;
        t.float(
            "end_s",
            if r.measured {
                end_s.min(measured_s)
            } else {
                end_s.min(0.0)
            },
        );
        t.declare("interval_s", Kind::Float);
        if let Some(s) = r.interval_s {
            t.float("interval_s", s);
        }
        t.text("target", &r.target);
        t.declare("target_type", Kind::Text);
        if let Some(tr) = run.summary.targets.iter().find(|x| x.name == r.target) {
            t.text("target_type", &tr.target_type);
        }
        t.text("operation", &r.op);
        t.count("ops", r.ops);
        t.count("errors", r.errors);
        t.float("rate_ops", r.rate_ops);
        t.float("rate_mb_s", r.rate_bytes / 1e6);
        t.count("p50_latency_ns", r.p50_ns);
        t.count("p99_latency_ns", r.p99_ns);
        t.count("max_latency_ns", r.max_ns);
        t.float("client_cpu_cores", r.client_cpu_cores);
    }
    Ok(())
}

/// Writes the table of `kind` to `path` in `format`.
pub fn export(
    store: &Store,
    kind: ExportKind,
    format: ExportFormat,
    path: &std::path::Path,
) -> Result<Table, ExportError> {
    let table = export_table(store, kind)?;
    let io = |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    match format {
        ExportFormat::Csv => {
            let file = std::fs::File::create(path).map_err(io)?;
            let mut out = std::io::BufWriter::new(file);
            table.write_csv(&mut out).map_err(io)?;
            std::io::Write::flush(&mut out).map_err(io)?;
        }
        ExportFormat::Parquet => parquet::write(&table, path)?,
    }
    Ok(table)
}
