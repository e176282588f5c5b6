//! Reading stored results back for reports and comparisons: a RESULT argument is a run folder
//! (holding `summary.json`), a study folder (holding `run-NNN` folders), or a run id (or a
//! unique start or end of one) in the results store. A run whose folder is not on this
//! machine is read from the files a shared store keeps of it (`--store postgres://...`), the
//! same bytes its folder held. Only stored files are read, never live state; every text that may hold a credential is redacted again on the way in. A file that
//! is missing is "not stored"; a file that is there but does not parse is an error naming it.

use std::path::{Path, PathBuf};

use crate::histograms::{self, Histograms};
use crate::redact;
use crate::store::{RunFiles, Store, StoreError, StoreLocation};
use crate::summary::RunSummary;
use crate::system::SystemInfo;
use crate::timeline::{Timeline, parse_timeline};
use crate::write::BASELINE_FILE;

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
    #[error("{path}: stored but corrupt: {detail}")]
    Bad { path: PathBuf, detail: String },
    #[error("{0}: a study folder without any finished run")]
    EmptyStudy(PathBuf),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Everything stored about one run.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub folder: PathBuf,
    pub summary: RunSummary,
    /// `None`: no system capture was stored (a corrupt one is an error when reading).
    pub system: Option<SystemInfo>,
    /// The study file as stored (redacted).
    pub study_text: Option<String>,
    /// This run's resolved plan (`plan.json`), redacted.
    pub plan: Option<serde_json::Value>,
    pub timeline: Timeline,
    /// What the step's `sample` events read (`samples.csv`; empty when none).
    pub samples: Vec<crate::samples::Sample>,
    /// The files read from the results store (the folder not being on this machine), of
    /// those read when needed: `None` when the run was read from its folder.
    pub from_store: Option<std::sync::Arc<FromStore>>,
}

/// A run's files a report reads when needed, as the results store keeps them.
#[derive(Debug, Default)]
pub struct FromStore {
    /// `histograms.hlog`.
    pub hlog: Option<Vec<u8>>,
    /// The study folder's `raid.json`, as text.
    pub raid: Option<String>,
    /// The study folder's `baseline.json`, as text.
    pub baseline: Option<String>,
}

impl StoredRun {
    /// A run of `summary` alone (no folder, plan or timeline): for tests and fuzz targets of
    /// what reads runs.
    pub fn of_summary(summary: RunSummary) -> StoredRun {
        StoredRun {
            folder: PathBuf::new(),
            summary,
            system: None,
            study_text: None,
            plan: None,
            timeline: Timeline::default(),
            samples: Vec::new(),
            from_store: None,
        }
    }

    /// The resolved workload of the target at `index` (from the plan), if stored.
    pub fn workload_json(&self, index: usize) -> Option<&serde_json::Value> {
        workload_json(self.plan.as_ref(), index)
    }

    /// The target's configuration (type, path, engine...), if stored.
    pub fn target_config_json(&self, index: usize) -> Option<&serde_json::Value> {
        target_config_json(self.plan.as_ref(), index)
    }

    /// The run's nominal timeline interval in seconds (the plan's `interval`; 1 s when the
    /// plan does not say).
    pub fn interval_seconds(&self) -> f64 {
        self.plan
            .as_ref()
            .and_then(|p| p.get("interval"))
            .and_then(|v| v.as_str())
            .and_then(|s| storlab_model::units::parse_duration(s).ok())
            .map(|d| d.as_secs_f64())
            .filter(|s| *s > 0.0)
            .unwrap_or(1.0)
    }

    /// Measured latency histograms from `histograms.hlog`, by tag (`target.op`,
    /// `target.op.intended`), each the sum of the run's measured intervals; the error names
    /// the file.
    pub fn latency_histograms(&self) -> Result<Histograms, String> {
        let Some(stored) = &self.from_store else {
            return histograms::read_measured(&self.folder, &self.timeline.rows);
        };
        let path = self.folder.join(crate::write::HDR_LOG_FILE);
        let Some(log) = &stored.hlog else {
            return Err(format!("{}: not in the results store", path.display()));
        };
        histograms::sum_measured_intervals(log, &self.timeline.rows)
            .map_err(|e| format!("{} (from the results store): {e}", path.display()))
    }

    /// Calls `f(tag, (start s, length s), histogram)` for each measured interval of
    /// `histograms.hlog`, in the log's order; the error names the file.
    pub fn each_latency_interval(
        &self,
        f: impl FnMut(&str, (f64, f64), hdrhistogram::Histogram<u64>) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(stored) = &self.from_store else {
            return histograms::read_each_measured_interval(&self.folder, &self.timeline.rows, f);
        };
        let path = self.folder.join(crate::write::HDR_LOG_FILE);
        let Some(log) = &stored.hlog else {
            return Err(format!("{}: not in the results store", path.display()));
        };
        histograms::each_measured_interval(log, &self.timeline.rows, f)
            .map_err(|e| format!("{} (from the results store): {e}", path.display()))
    }
}

/// The workload of the target at `index` in a stored plan.
pub fn workload_json(plan: Option<&serde_json::Value>, index: usize) -> Option<&serde_json::Value> {
    plan?.get("targets")?.get(index)?.get("workload")
}

/// The configuration of the target at `index` in a stored plan.
pub fn target_config_json(
    plan: Option<&serde_json::Value>,
    index: usize,
) -> Option<&serde_json::Value> {
    plan?.get("targets")?.get(index)?.get("config")
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

/// A text file that may not have been stored: `None` only when it does not exist.
fn read_optional_text(path: &Path) -> Result<Option<String>, LoadError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LoadError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A JSON file that may not have been stored: `None` when it does not exist, an error naming
/// the file when it exists but does not parse.
pub(crate) fn read_optional_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, LoadError> {
    optional_json(path, read_optional_text(path)?)
}

/// The text of a JSON file that may not have been stored, parsed (redacted).
pub(crate) fn optional_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: Option<String>,
) -> Result<Option<T>, LoadError> {
    match text {
        Some(t) => parse_json(path, &redact(&t)).map(Some),
        None => Ok(None),
    }
}

/// A run folder's system capture (`system.json`): `None` when none was stored.
pub fn read_system(folder: &Path) -> Result<Option<SystemInfo>, LoadError> {
    read_optional_json(&folder.join("system.json"))
}

/// Where `storlab fio` stores its job model in a study folder.
pub const FIO_JOBS_FILE: &str = "fio-jobs/jobs.json";

/// A `storlab fio` study folder's job model ([`FIO_JOBS_FILE`]), what fio's outputs are made
/// from with the stored runs: `None` when the study was not run by `storlab fio`.
pub fn read_fio_jobs(folder: &Path) -> Result<Option<storlab_model::fio_jobs::FioJobs>, LoadError> {
    read_optional_json(&folder.join(FIO_JOBS_FILE))
}

/// The published figures the runs' studies name: the first study folder's that has them.
pub fn stored_baseline(
    runs: &[StoredRun],
) -> Result<Option<storlab_model::baseline::Baseline>, LoadError> {
    for r in runs {
        let Some(folder) = r.folder.parent() else {
            continue;
        };
        let path = folder.join(BASELINE_FILE);
        let found = match &r.from_store {
            Some(s) => optional_json(&path, s.baseline.clone())?,
            None => read_optional_json(&path)?,
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// A run folder's summary (`summary.json`).
pub fn read_summary(folder: &Path) -> Result<RunSummary, LoadError> {
    let path = folder.join("summary.json");
    summary_from_text(&path, &read_text(&path)?)
}

/// A summary from the text of `summary.json` at `path` (named in the error).
pub fn summary_from_text(path: &Path, text: &str) -> Result<RunSummary, LoadError> {
    parse_json(path, &redact(text))
}

/// Reads one run folder.
pub fn read_run_folder(folder: &Path) -> Result<StoredRun, LoadError> {
    let summary = read_summary(folder)?;
    read_run(folder, summary, |name| {
        read_optional_text(&folder.join(name))
    })
}

/// A run of `summary`, its other files' text given by `text` (file name; `None`: not stored).
fn read_run(
    folder: &Path,
    summary: RunSummary,
    text: impl Fn(&str) -> Result<Option<String>, LoadError>,
) -> Result<StoredRun, LoadError> {
    let system = optional_json(&folder.join("system.json"), text("system.json")?)?;
    let study_text = text("study.toml")?.map(|t| redact(&t));
    let plan = optional_json(&folder.join("plan.json"), text("plan.json")?)?;
    let timeline = text(crate::write::TIMELINE_FILE)?
        .map(|t| parse_timeline(&t))
        .unwrap_or_default();
    let samples = text(crate::samples::SAMPLES_FILE)?
        .map(|t| crate::samples::parse_samples(&t))
        .unwrap_or_default();
    Ok(StoredRun {
        folder: folder.to_path_buf(),
        summary,
        system,
        study_text,
        plan,
        timeline,
        samples,
        from_store: None,
    })
}

/// A run from the files the store keeps of it (its folder, `folder`, is not on this
/// machine); the summary is the row's when the files do not hold it.
fn read_stored_run(
    store: &Store,
    run_id: &str,
    folder: &Path,
    mut files: RunFiles,
) -> Result<StoredRun, LoadError> {
    let text_of = |name: &str, bytes: Option<&Vec<u8>>| -> Result<Option<String>, LoadError> {
        bytes
            .map(|b| String::from_utf8(b.clone()))
            .transpose()
            .map_err(|e| LoadError::Bad {
                path: folder.join(name),
                detail: format!("in the results store: {e}"),
            })
    };
    let summary = match text_of("summary.json", files.get("summary.json"))? {
        Some(t) => summary_from_text(&folder.join("summary.json"), &t)?,
        None => store.summary(run_id)?,
    };
    let from_store = FromStore {
        hlog: files.remove(crate::write::HDR_LOG_FILE),
        raid: text_of("raid.json", files.get("study/raid.json"))?,
        baseline: text_of(BASELINE_FILE, files.get(&format!("study/{BASELINE_FILE}")))?,
    };
    let mut run = read_run(folder, summary, |name| text_of(name, files.get(name)))?;
    run.from_store = Some(std::sync::Arc::new(from_store));
    Ok(run)
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

/// Resolves one RESULT argument to its runs, a run id in the SQLite store of `results_dir`.
pub fn load_result(arg: &str, results_dir: &Path) -> Result<Vec<StoredRun>, LoadError> {
    load_result_at(arg, &StoreLocation::in_folder(results_dir))
}

/// Resolves one RESULT argument to its runs, a run id in the store at `location`.
pub fn load_result_at(arg: &str, location: &StoreLocation) -> Result<Vec<StoredRun>, LoadError> {
    let path = Path::new(arg);
    if path.is_dir() {
        if path.join("summary.json").exists() {
            return Ok(vec![read_run_folder(path)?]);
        }
        return read_study_folder(path);
    }
    if let StoreLocation::Sqlite(file) = location
        && !file.exists()
    {
        return Err(LoadError::NotFound(arg.into()));
    }
    let store = Store::open_location(location)?;
    // A study's folder name selects all its runs, as its folder does.
    let study = store.study_run_ids(arg)?;
    if !study.is_empty() {
        return study.iter().map(|id| load_run_by_id(&store, id)).collect();
    }
    match store.run_id(arg) {
        Ok(run_id) => Ok(vec![load_run_by_id(&store, &run_id)?]),
        Err(StoreError::NoSuchRun(_)) => Err(LoadError::NotFound(arg.into())),
        Err(e) => Err(e.into()),
    }
}

/// The stored run `run_id` (exactly: never a path or a prefix): from its folder when it is
/// on this machine, else from the files the store keeps of it.
pub fn load_run_by_id(store: &Store, run_id: &str) -> Result<StoredRun, LoadError> {
    let folder = match store.folder(run_id) {
        Ok(folder) => folder,
        Err(StoreError::NoSuchRun(_)) => return Err(LoadError::NotFound(run_id.into())),
        Err(e) => return Err(e.into()),
    };
    if folder.join("summary.json").exists() {
        return read_run_folder(&folder);
    }
    let files = store.files(run_id)?;
    if files.is_empty() {
        // Not kept by the store: the folder's error says what is missing.
        return read_run_folder(&folder);
    }
    read_stored_run(store, run_id, &folder, files)
}

/// Resolves several RESULT arguments (run ids in the SQLite store of `results_dir`); a run
/// named twice is kept once.
pub fn load_results(args: &[String], results_dir: &Path) -> Result<Vec<StoredRun>, LoadError> {
    load_results_at(args, &StoreLocation::in_folder(results_dir))
}

/// Resolves several RESULT arguments (run ids in the store at `location`); a run named twice
/// is kept once.
pub fn load_results_at(
    args: &[String],
    location: &StoreLocation,
) -> Result<Vec<StoredRun>, LoadError> {
    let mut runs: Vec<StoredRun> = Vec::new();
    for a in args {
        for r in load_result_at(a, location)? {
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

    /// A run folder holding a minimal valid summary.
    fn run_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = crate::fixtures::summary(1, "s", &[], &[("a", 10.0, 5)]);
        std::fs::write(
            dir.path().join("summary.json"),
            serde_json::to_string(&s).expect("json"),
        )
        .expect("write");
        dir
    }

    #[test]
    fn a_missing_system_capture_is_not_stored() {
        let dir = run_folder();
        let run = read_run_folder(dir.path()).expect("reads");
        assert!(run.system.is_none());
        assert!(run.timeline.rows.is_empty());
    }

    #[test]
    fn a_corrupt_system_capture_is_an_error_naming_the_file() {
        let dir = run_folder();
        std::fs::write(dir.path().join("system.json"), "{\"hostname\": ").expect("write");
        let e = read_run_folder(dir.path())
            .expect_err("corrupt")
            .to_string();
        assert!(e.contains("system.json"), "{e}");
        assert!(e.contains("EOF"), "the parse error is given: {e}");
        assert!(!e.contains("no system capture"), "{e}");
    }

    #[test]
    fn a_corrupt_summary_is_an_error_naming_the_file() {
        let study = tempfile::tempdir().expect("tempdir");
        let run = study.path().join("run-001");
        std::fs::create_dir(&run).expect("mkdir");
        std::fs::write(run.join("summary.json"), "not json").expect("write");
        let e = read_study_folder(study.path())
            .expect_err("corrupt")
            .to_string();
        assert!(e.contains("run-001/summary.json"), "{e}");
        assert!(e.contains("expected"), "the parse error is given: {e}");
    }

    #[test]
    fn a_run_whose_folder_is_gone_is_read_from_the_files_its_store_keeps() {
        let results = tempfile::tempdir().expect("tempdir");
        let run = results
            .path()
            .join("s-20261127-000000.000-abcd")
            .join("run-001");
        std::fs::create_dir_all(&run).expect("mkdir");
        std::fs::write(run.join("plan.json"), "{\"interval\": \"250ms\"}").expect("plan");
        std::fs::write(run.join("histograms.hlog"), b"not a log").expect("hlog");
        let s = crate::fixtures::summary(1, "s", &[], &[("a", 10.0, 5)]);
        std::fs::write(
            run.join("summary.json"),
            serde_json::to_string(&s).expect("json"),
        )
        .expect("summary");
        let db = results.path().join("lab.db");
        let mut store = Store::open_file(&db).expect("store");
        crate::push::push(&mut store, std::slice::from_ref(&run)).expect("push");
        let run = std::fs::canonicalize(&run).expect("canonical");
        let from_folder = read_run_folder(&run).expect("folder");
        std::fs::remove_dir_all(results.path().join("s-20261127-000000.000-abcd")).expect("rm");
        let location = StoreLocation::Sqlite(db);
        let runs = load_result_at(&s.run_id, &location).expect("from the store");
        assert_eq!(runs.len(), 1);
        let r = &runs[0];
        assert_eq!(r.folder, run, "the folder it was pushed from");
        assert!(r.from_store.is_some());
        assert_eq!(r.summary.run_id, from_folder.summary.run_id);
        assert_eq!(r.plan, from_folder.plan);
        assert_eq!(r.interval_seconds(), 0.25);
        // The HDR log is the store's: its error names the file and where it came from.
        let e = r.latency_histograms().expect_err("not a log");
        assert!(
            e.contains("histograms.hlog (from the results store)"),
            "{e}"
        );
    }
}
