//! The entry points of the fuzz targets (`fuzz/`, run with cargo-fuzz by `bench/fuzz`) and of
//! the corpus replay that CI runs on stable (`tests/fuzz_corpus.rs`): each hands arbitrary
//! bytes to one of storlab's readers of input it did not write itself (study files, fio job
//! files, YCSB property files, db_bench flags, IOmeter `.icf` files, and the stored results:
//! `summary.json`, `timeline.csv`, `histograms.hlog`). None may panic or hang on any input:
//! a bad input is an error, which the entry point returns as its message.

use std::path::Path;

use storlab_results::histograms::sum_measured_intervals;
use storlab_results::stored::{StoredRun, summary_from_text};
use storlab_results::timeline::{Timeline, parse_timeline};
use storlab_workload::ycsb::workload::Phase;

/// One reader under fuzzing; its name is the fuzz target's and its corpus folder's
/// (`fuzz/corpus/NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuzzTarget {
    /// A study file to a validated plan.
    Study,
    /// An fio job file to a plan.
    FioJob,
    /// A YCSB `-P` property file (with `load` and `run`).
    YcsbProperties,
    /// db_bench's flags (the input split at white space) to the study they stand for.
    DbBenchFlags,
    /// An IOmeter `.icf` file to its workloads' TOML.
    IometerIcf,
    /// A stored `summary.json`.
    SummaryJson,
    /// A stored `timeline.csv`.
    TimelineCsv,
    /// A stored HDR interval log (`histograms.hlog`).
    IntervalLog,
}

impl FuzzTarget {
    pub const ALL: [FuzzTarget; 8] = [
        FuzzTarget::Study,
        FuzzTarget::FioJob,
        FuzzTarget::YcsbProperties,
        FuzzTarget::DbBenchFlags,
        FuzzTarget::IometerIcf,
        FuzzTarget::SummaryJson,
        FuzzTarget::TimelineCsv,
        FuzzTarget::IntervalLog,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FuzzTarget::Study => "study",
            FuzzTarget::FioJob => "fio-job",
            FuzzTarget::YcsbProperties => "ycsb-properties",
            FuzzTarget::DbBenchFlags => "db-bench-flags",
            FuzzTarget::IometerIcf => "iometer-icf",
            FuzzTarget::SummaryJson => "summary-json",
            FuzzTarget::TimelineCsv => "timeline-csv",
            FuzzTarget::IntervalLog => "interval-log",
        }
    }

    /// Runs the reader on `data`: `Ok` when it accepted the input, else its error.
    pub fn run(self, data: &[u8]) -> Result<(), String> {
        match self {
            FuzzTarget::Study => study(data),
            FuzzTarget::FioJob => fio_job(data),
            FuzzTarget::YcsbProperties => ycsb_properties(data),
            FuzzTarget::DbBenchFlags => db_bench_flags(data),
            FuzzTarget::IometerIcf => iometer_icf(data),
            FuzzTarget::SummaryJson => summary_json(data),
            FuzzTarget::TimelineCsv => timeline_csv(data),
            FuzzTarget::IntervalLog => interval_log(data),
        }
    }
}

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A study file to a validated plan.
pub fn study(data: &[u8]) -> Result<(), String> {
    storlab_study::parse("fuzz.toml", &text(data))
        .map(drop)
        .map_err(|e| e.to_string())
}

/// An fio job file (no environment variables) to a plan.
pub fn fio_job(data: &[u8]) -> Result<(), String> {
    let lines = |e: Vec<storlab_study::fio::LineError>| format!("{} errors", e.len());
    let file = storlab_study::fio::from_text("fuzz.fio", &text(data), &|_| None).map_err(lines)?;
    storlab_study::fio::plan::build(vec![file])
        .map(drop)
        .map_err(lines)
}

/// A YCSB property file given with `-P`, read for `load` and for `run`.
pub fn ycsb_properties(data: &[u8]) -> Result<(), String> {
    let text = text(data);
    let args = ["-P".to_string(), "fuzz.properties".to_string()];
    let read = |_: &Path| Ok(text.clone());
    let load = storlab_study::ycsb::parse_args_with(Phase::Load, &args, &read);
    let run = storlab_study::ycsb::parse_args_with(Phase::Run, &args, &read);
    load.and(run).map(drop).map_err(|e| e.to_string())
}

/// db_bench's flags (the input split at white space) to the study they stand for, validated.
pub fn db_bench_flags(data: &[u8]) -> Result<(), String> {
    let args: Vec<String> = text(data).split_whitespace().map(String::from).collect();
    let flags = storlab_study::dbbench::parse_flags(&args).map_err(|e| e.to_string())?;
    storlab_study::parse("db_bench.toml", &flags.study_text())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// An IOmeter `.icf` file to its workloads' TOML.
pub fn iometer_icf(data: &[u8]) -> Result<(), String> {
    let icf = storlab_workload::icf::parse(&text(data)).map_err(|e| e.to_string())?;
    storlab_workload::icf::to_toml(&icf, "fuzz.icf")
        .map(drop)
        .map_err(|e| e.to_string())
}

/// A stored `summary.json`, read as the reports read it.
pub fn summary_json(data: &[u8]) -> Result<(), String> {
    let summary =
        summary_from_text(Path::new("summary.json"), &text(data)).map_err(|e| e.to_string())?;
    let run = StoredRun::of_summary(summary);
    let interval_s = run.interval_seconds();
    storlab_results::phases::for_run(&run.summary.outline(), &run.timeline, interval_s);
    Ok(())
}

/// A stored `timeline.csv`, read and drawn per target as the reports do.
pub fn timeline_csv(data: &[u8]) -> Result<(), String> {
    let timeline: Timeline = parse_timeline(&text(data));
    let mut targets: Vec<&str> = timeline.rows.iter().map(|r| r.target.as_str()).collect();
    targets.dedup();
    for t in targets {
        timeline.target_points(t, 1.0, 10.0);
        timeline.target_points(t, 0.25, 2.6);
    }
    Ok(())
}

/// A stored HDR interval log, its measured intervals added up and read as the reports do.
pub fn interval_log(data: &[u8]) -> Result<(), String> {
    let sums = sum_measured_intervals(data, &[])?;
    for h in sums.values() {
        h.value_at_quantile(0.99);
        h.mean();
        h.max();
    }
    Ok(())
}
