//! Reading stored results for reports and comparisons: a RESULT argument is a run folder
//! (holding `summary.json`), a study folder (holding `run-NNN` folders), or a run id (or a
//! unique start or end of one) in the results store. Only stored files are read, never live
//! state; every text that may hold a credential is redacted again on the way in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

use crate::results::redact;
use crate::results::store::{STORE_FILE, Store, StoreError};
use crate::results::summary::RunSummary;
use crate::results::system::SystemInfo;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "`{0}` is not a run folder, a study folder or a run id in the results store (see `storlab results list`)"
    )]
    NotFound(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot be read: {detail}")]
    Bad { path: PathBuf, detail: String },
    #[error("{0}: a study folder without any finished run")]
    EmptyStudy(PathBuf),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One second of one target and operation kind, from `timeline.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    /// Interval index: negative during warm-up.
    pub second: i64,
    pub measured: bool,
    pub target: String,
    pub op: String,
    pub ops: u64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub errors: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub client_cpu_cores: f64,
}

/// Everything stored about one run.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub folder: PathBuf,
    pub summary: RunSummary,
    pub system: Option<SystemInfo>,
    /// The study file as stored (redacted).
    pub study_text: Option<String>,
    /// This run's resolved plan (`plan.json`), redacted.
    pub plan: Option<serde_json::Value>,
    pub timeline: Vec<TimelineRow>,
}

impl StoredRun {
    /// The resolved workload of the target at `index` (from the plan), if stored.
    pub fn workload_json(&self, index: usize) -> Option<&serde_json::Value> {
        self.plan
            .as_ref()?
            .get("targets")?
            .get(index)?
            .get("workload")
    }

    /// The target's configuration (type, path, engine...), if stored.
    pub fn target_config_json(&self, index: usize) -> Option<&serde_json::Value> {
        self.plan
            .as_ref()?
            .get("targets")?
            .get(index)?
            .get("config")
    }

    /// Measured latency histograms from `histograms.hlog`, by tag (`target.op`,
    /// `target.op.intended`), each the sum of the run's measured intervals.
    pub fn latency_histograms(&self) -> Result<BTreeMap<String, Histogram<u64>>, LoadError> {
        let path = self.folder.join("histograms.hlog");
        let bytes = std::fs::read(&path).map_err(|source| LoadError::Io {
            path: path.clone(),
            source,
        })?;
        sum_measured_intervals(&bytes, &self.timeline)
            .map_err(|detail| LoadError::Bad { path, detail })
    }
}

/// The tag the collector gives a target's kind in the interval log.
pub fn hlog_tag(target: &str, op: &str) -> String {
    format!("{}.{op}", target.replace([' ', ',', '='], "_"))
}

/// Adds up the measured intervals of an interval log, per tag.
///
/// The collector writes one interval per target, kind and second in time order, warm-up
/// seconds first; it stamps warm-up intervals with start time 0 like the first measured
/// second, so the timestamps cannot tell them apart. The timeline has one row per written
/// interval, so the number of warm-up rows of a target and kind is the number of leading
/// intervals of its tags to skip.
pub fn sum_measured_intervals(
    log: &[u8],
    timeline: &[TimelineRow],
) -> Result<BTreeMap<String, Histogram<u64>>, String> {
    let mut warmup: BTreeMap<String, usize> = BTreeMap::new();
    for r in timeline.iter().filter(|r| !r.measured) {
        let tag = hlog_tag(&r.target, &r.op);
        *warmup.entry(tag.clone()).or_default() += 1;
        *warmup.entry(format!("{tag}.intended")).or_default() += 1;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(log) {
        let entry = entry.map_err(|e| format!("interval log: {e:?}"))?;
        let LogEntry::Interval(iv) = entry else {
            continue;
        };
        let tag = iv.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
        let n = seen.entry(tag.clone()).or_default();
        *n += 1;
        if *n <= warmup.get(&tag).copied().unwrap_or(0) {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(iv.encoded_histogram())
            .map_err(|e| format!("interval log: base64: {e}"))?;
        let h: Histogram<u64> = de
            .deserialize(&mut std::io::Cursor::new(raw))
            .map_err(|e| format!("interval log: histogram: {e:?}"))?;
        match out.get_mut(&tag) {
            Some(sum) => sum
                .add(&h)
                .map_err(|e| format!("interval log: adding: {e:?}"))?,
            None => {
                out.insert(tag, h);
            }
        }
    }
    Ok(out)
}

fn read_text(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, LoadError> {
    serde_json::from_str(text).map_err(|e| LoadError::Bad {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// Parses `timeline.csv` (rows that do not parse are skipped).
pub fn parse_timeline(text: &str) -> Vec<TimelineRow> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split(',').collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let idx = [
        "second",
        "phase",
        "target",
        "op",
        "ops",
        "rate_ops",
        "rate_bytes",
        "errors",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "client_cpu_cores",
    ]
    .map(at);
    let mut rows = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != cols.len() {
            continue;
        }
        let get = |i: usize| idx[i].and_then(|i| f.get(i)).copied().unwrap_or("");
        let num = |i: usize| get(i).parse::<f64>().ok();
        let int = |i: usize| get(i).parse::<u64>().ok();
        let Some(second) = get(0).parse::<i64>().ok() else {
            continue;
        };
        rows.push(TimelineRow {
            second,
            measured: get(1) == "measure",
            target: get(2).to_string(),
            op: get(3).to_string(),
            ops: int(4).unwrap_or(0),
            rate_ops: num(5).unwrap_or(0.0),
            rate_bytes: num(6).unwrap_or(0.0),
            errors: int(7).unwrap_or(0),
            p50_ns: int(8).unwrap_or(0),
            p99_ns: int(9).unwrap_or(0),
            max_ns: int(10).unwrap_or(0),
            client_cpu_cores: num(11).unwrap_or(0.0),
        });
    }
    rows
}

/// Reads one run folder.
pub fn read_run_folder(folder: &Path) -> Result<StoredRun, LoadError> {
    let summary_path = folder.join("summary.json");
    let summary: RunSummary = parse_json(&summary_path, &redact(&read_text(&summary_path)?))?;
    let system = std::fs::read_to_string(folder.join("system.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&redact(&t)).ok());
    let study_text = std::fs::read_to_string(folder.join("study.toml"))
        .ok()
        .map(|t| redact(&t));
    let plan = std::fs::read_to_string(folder.join("plan.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&redact(&t)).ok());
    let timeline = std::fs::read_to_string(folder.join("timeline.csv"))
        .map(|t| parse_timeline(&t))
        .unwrap_or_default();
    Ok(StoredRun {
        folder: folder.to_path_buf(),
        summary,
        system,
        study_text,
        plan,
        timeline,
    })
}

/// The finished runs of a study folder, in run order (runs without a summary are skipped).
pub fn read_study_folder(folder: &Path) -> Result<Vec<StoredRun>, LoadError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|source| LoadError::Io {
            path: folder.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("run-"))
                && p.join("summary.json").exists()
        })
        .collect();
    dirs.sort();
    let mut runs = dirs
        .iter()
        .map(|d| read_run_folder(d))
        .collect::<Result<Vec<_>, _>>()?;
    runs.sort_by_key(|r| r.summary.run_index);
    if runs.is_empty() {
        return Err(LoadError::EmptyStudy(folder.to_path_buf()));
    }
    Ok(runs)
}

/// Resolves one RESULT argument to its runs.
pub fn load_result(arg: &str, results_dir: &Path) -> Result<Vec<StoredRun>, LoadError> {
    let path = Path::new(arg);
    if path.is_dir() {
        if path.join("summary.json").exists() {
            return Ok(vec![read_run_folder(path)?]);
        }
        return read_study_folder(path);
    }
    if results_dir.join(STORE_FILE).exists() {
        let store = Store::open(results_dir)?;
        return match store.folder(arg) {
            Ok(folder) => Ok(vec![read_run_folder(&folder)?]),
            Err(StoreError::NoSuchRun(_)) => Err(LoadError::NotFound(arg.into())),
            Err(e) => Err(e.into()),
        };
    }
    Err(LoadError::NotFound(arg.into()))
}

/// Resolves several RESULT arguments; a run named twice is kept once.
pub fn load_results(args: &[String], results_dir: &Path) -> Result<Vec<StoredRun>, LoadError> {
    let mut runs: Vec<StoredRun> = Vec::new();
    for a in args {
        for r in load_result(a, results_dir)? {
            if !runs.iter().any(|x| x.summary.run_id == r.summary.run_id) {
                runs.push(r);
            }
        }
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_rows_parse() {
        let text = format!(
            "{}\n-1,warmup,a,read,10,10.0,40960,40960.0,0,5,9,12,,,0.5\n0,measure,a,read,20,20.0,81920,81920.0,1,6,10,15,,,0.25\nbad line\n",
            crate::run::collector::TIMELINE_HEADER
        );
        let rows = parse_timeline(&text);
        assert_eq!(rows.len(), 2);
        assert!(!rows[0].measured && rows[1].measured);
        assert_eq!((rows[1].second, rows[1].ops, rows[1].errors), (0, 20, 1));
        assert_eq!((rows[1].p99_ns, rows[1].max_ns), (10, 15));
        assert_eq!(rows[1].client_cpu_cores, 0.25);
    }

    #[test]
    fn warmup_intervals_are_left_out_of_the_sum() {
        use hdrhistogram::serialization::V2DeflateSerializer;
        use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
        use std::time::Duration;
        let mut buf = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        let builder = &mut IntervalLogWriterBuilder::new();
        let mut log = builder.begin_log_with(&mut buf, &mut ser).unwrap();
        let mut timeline = Vec::new();
        // Two warm-up seconds at 1 ms, then three measured seconds at 2 ms, as the collector
        // writes them (warm-up stamped at 0 too).
        for (second, value) in [
            (-2i64, 1_000_000u64),
            (-1, 1_000_000),
            (0, 2_000_000),
            (1, 2_000_000),
            (2, 2_000_000),
        ] {
            let mut h = crate::record::new_histogram::<u64>();
            h.record_n(value, 10).unwrap();
            let start = Duration::from_secs(second.max(0) as u64);
            log.write_histogram(&h, start, Duration::from_secs(1), Tag::new("a_b.read"))
                .unwrap();
            timeline.push(TimelineRow {
                second,
                measured: second >= 0,
                target: "a b".into(),
                op: "read".into(),
                ops: 10,
                rate_ops: 10.0,
                rate_bytes: 0.0,
                errors: 0,
                p50_ns: value,
                p99_ns: value,
                max_ns: value,
                client_cpu_cores: 0.0,
            });
        }
        drop(log);
        let sums = sum_measured_intervals(&buf, &timeline).unwrap();
        let h = &sums["a_b.read"];
        assert_eq!(h.len(), 30);
        assert!(
            h.min() >= 1_990_000,
            "a warm-up value was counted: {}",
            h.min()
        );
    }
}
