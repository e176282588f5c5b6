//! The results store: every run with its status and summary, in an embedded SQLite database
//! beside the run folders (the default: `results.db` in the results folder) or in a
//! PostgreSQL database a lab shares (`--store postgres://...`). A run is inserted as
//! `running` before it starts and updated when it ends, so a storlab killed mid-run leaves a
//! readable store with that run shown as `interrupted`.
//!
//! Both keep the same schema (`schema`, versioned and applied on first use). A shared
//! (PostgreSQL) store also keeps each run's files (summary, plan, system capture, study,
//! timeline, HDR interval log), so that a report can be made from it alone on a machine
//! without the run's folder; `storlab results push` uploads folders made while it was down.

pub mod files;
mod location;
mod pg;
mod pg_tls;
mod pgpass;
mod schema;
mod sqlite;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::summary::RunSummary;
pub use location::{PgUrl, StoreLocation};
use storlab_study::plan::RunPlan;

pub const STORE_FILE: &str = "results.db";

/// A run's files as a store keeps them: file name (`summary.json`, `histograms.hlog`...; a
/// study folder's file as `study/NAME`) and bytes.
pub type RunFiles = BTreeMap<String, Vec<u8>>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Sql {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: the results index is damaged; the run folders beside it hold every \
         result: `storlab results reindex` rebuilds it from them",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{}: the disk is full: no room to record the run; its folder keeps what was written: \
         `storlab results reindex` indexes it once there is room",
        path.display()
    )]
    Full {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// A store of another schema version than this storlab reads, opened to read only.
    #[error(
        "{}: a results store of schema version {version}, where this storlab reads version {reads}: `storlab results list` (which may write) brings an older one up to date",
        path.display()
    )]
    OtherSchema {
        path: PathBuf,
        version: i64,
        reads: i64,
    },
    #[error("no run `{0}` in the results store (see `storlab results list`)")]
    NoSuchRun(String),
    /// A name that more than one run's id starts or ends with.
    #[error(
        "`{name}` names {} runs{}: {}; give one run's id (`storlab results list`){}",
        matches.len(),
        if *study { " of one study" } else { "" },
        listed(matches),
        if *study { ", or report the study's runs together (`storlab report NAME`)" } else { "" }
    )]
    Ambiguous {
        name: String,
        /// The ids, the newest first (at most 1,001).
        matches: Vec<String>,
        /// They are the runs of the study folder `name`.
        study: bool,
    },
    #[error("run `{run}` has a summary that cannot be read: {source}")]
    BadSummary {
        run: String,
        source: serde_json::Error,
    },
    /// `--store` / `STORLAB_STORE` that names no store (the text shown is redacted).
    #[error("--store {location}: {detail}")]
    BadLocation { location: String, detail: String },
    /// A PostgreSQL store that cannot be connected to, or whose connection broke.
    #[error("the results store {location} cannot be reached: {detail}")]
    Unreachable { location: String, detail: String },
    /// A PostgreSQL store that refused a statement.
    #[error("the results store {location}: {detail}")]
    Postgres { location: String, detail: String },
}

impl StoreError {
    /// The store could not be reached (a database that is down): what was measured stays in
    /// its folder, to be pushed later.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }
}

/// A row of `storlab results list`.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunRow {
    pub run_id: String,
    pub study: String,
    pub step: String,
    pub run_index: i64,
    pub run_count: i64,
    pub parameters: String,
    pub status: String,
    pub started_at: String,
    pub folder: String,
    pub rate_ops: Option<f64>,
    /// Why a run is `incomplete` (the file not written and the error).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A run as the store records it when it begins.
pub struct NewRun<'a> {
    pub run_id: &'a str,
    pub study: &'a str,
    pub step: &'a str,
    pub run_index: usize,
    pub run_count: usize,
    pub repetition: u32,
    /// `key=value` pairs, space-separated.
    pub parameters: &'a str,
    /// RFC 3339.
    pub started_at: &'a str,
    pub folder: &'a Path,
    /// The storlab process that runs it (0: none).
    pub pid: u32,
}

/// A verify row of a run: a class of blocks (or keys) of one target's pass.
pub(super) struct VerifyRow {
    target: String,
    class: String,
    blocks: i64,
    first_offsets: String,
    kind: &'static str,
    /// Its place in the target's pass.
    position: i64,
}

/// After the run, per target; then `verify` events, as `TARGET (event NAME)`. Key-value
/// passes: `blocks` holds keys and `first_offsets` the first keys.
fn verify_rows_of(summary: &RunSummary) -> Vec<VerifyRow> {
    let event_passes = summary.events.iter().filter_map(|e| {
        let o = e.outcome.as_ref()?;
        let v = o.verify.as_deref()?;
        Some((format!("{} (event {})", v.target(), o.name), v))
    });
    let passes: Vec<(String, &storlab_verify::Verified)> = summary
        .targets
        .iter()
        .filter_map(|t| t.verify.as_ref().map(|v| (t.name.clone(), v)))
        .chain(event_passes)
        .collect();
    let mut rows = Vec::new();
    for (target, v) in passes {
        for (position, (class, count, first)) in v.class_rows().into_iter().enumerate() {
            rows.push(VerifyRow {
                target: target.clone(),
                class: class.to_string(),
                blocks: count as i64,
                first_offsets: first,
                kind: v.kind(),
                position: position as i64,
            });
        }
    }
    rows
}

enum Backend {
    Sqlite(sqlite::SqliteStore),
    Postgres(pg::PgStore),
}

/// The results store, over SQLite or PostgreSQL.
pub struct Store {
    backend: Backend,
}

/// `$body` with `$s` bound to the backend, whichever it is.
macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            Backend::Sqlite($s) => $body,
            Backend::Postgres($s) => $body,
        }
    };
}

impl Store {
    /// Opens (creating if needed) the SQLite store in a results folder. Several storlab
    /// processes may open one store at once: a database another one is creating or locking
    /// is waited for (up to 30 s), never an error.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Store::open_file(&dir.join(STORE_FILE))
    }

    /// Opens (creating if needed) the SQLite store in the database file `path`.
    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        Ok(Store {
            backend: Backend::Sqlite(sqlite::SqliteStore::open_file(path)?),
        })
    }

    /// Opens (creating its tables if needed) the store at `location`. Several storlab
    /// processes may write to one store at once.
    pub fn open_location(location: &StoreLocation) -> Result<Store, StoreError> {
        match location {
            StoreLocation::Sqlite(file) => {
                if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
                Store::open_file(file)
            }
            StoreLocation::Postgres(url) => Ok(Store {
                backend: Backend::Postgres(pg::PgStore::connect(url)?),
            }),
        }
    }

    /// Opens the store at `location` to read only (`storlab serve`): an SQLite store is
    /// opened read-only and never made or brought up to date; a PostgreSQL store's session
    /// is read-only.
    pub fn open_to_read(location: &StoreLocation) -> Result<Store, StoreError> {
        Ok(Store {
            backend: match location {
                StoreLocation::Sqlite(file) => {
                    Backend::Sqlite(sqlite::SqliteStore::open_to_read(file)?)
                }
                StoreLocation::Postgres(url) => {
                    Backend::Postgres(pg::PgStore::connect_to_read(url)?)
                }
            },
        })
    }

    /// Whether the store is shared (PostgreSQL): it then keeps each run's files too.
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// Records a run as started.
    pub fn begin_run(
        &mut self,
        run_id: &str,
        study: &str,
        run: &RunPlan,
        run_count: usize,
        folder: &Path,
        started: SystemTime,
    ) -> Result<(), StoreError> {
        let params_text: Vec<String> = run
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        self.insert_run(&NewRun {
            run_id,
            study,
            step: &run.step,
            run_index: run.index,
            run_count,
            repetition: run.repetition,
            parameters: &params_text.join(" "),
            started_at: &crate::rfc3339(started),
            folder,
            pid: std::process::id(),
        })
    }

    /// Adds a run as `running`; a run id already there is an error, never replaced.
    pub fn insert_run(&mut self, r: &NewRun) -> Result<(), StoreError> {
        each!(&mut self.backend, s => s.insert_run(r, false))
    }

    /// Adds a run as `running`, or makes its row anew when its id is there (a push).
    pub fn upsert_run(&mut self, r: &NewRun) -> Result<(), StoreError> {
        each!(&mut self.backend, s => s.insert_run(r, true))
    }

    /// Stores a run's summary and final status; a shared store also keeps the files of its
    /// folder (written and synced before).
    pub fn finish_run(&mut self, run_id: &str, summary: &RunSummary) -> Result<(), StoreError> {
        each!(&mut self.backend, s => s.finish_run(run_id, summary))?;
        let folder = self.folder(run_id)?;
        // What its `sample` events read, from the folder's `samples.csv` (a run without the
        // file had no sample event: nothing to write).
        if let Some(samples) = files::read_samples(&folder)? {
            each!(&mut self.backend, s => s.store_samples(run_id, &samples))?;
        }
        if self.is_shared() {
            let files = files::read_run_files(&folder)?;
            self.put_files(run_id, &files)?;
        }
        Ok(())
    }

    /// Marks the run kept in `folder` `incomplete`, with what is missing: a result file
    /// could not be written. Its folder keeps what was written.
    pub fn mark_incomplete(&mut self, folder: &Path, note: &str) -> Result<(), StoreError> {
        each!(&mut self.backend, s => s.mark_incomplete(folder, note))
    }

    /// Verify results of a run: (target, class, blocks, first offsets), as stored.
    pub fn verify_rows(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, u64, String)>, StoreError> {
        each!(&self.backend, s => s.verify_rows(run_id))
    }

    /// All runs, oldest first. A `running` run whose process is gone is shown `interrupted`.
    pub fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        each!(&self.backend, s => s.list())
    }

    /// A run's stored summary. Accepts a full run id or a unique suffix/prefix of one.
    pub fn summary(&self, run: &str) -> Result<RunSummary, StoreError> {
        let id = self.run_id(run)?;
        each!(&self.backend, s => s.summary(&id))
    }

    /// A run's folder (on the machine that ran or pushed it). Accepts a full run id or a
    /// unique suffix/prefix of one, like [`Store::summary`].
    pub fn folder(&self, run: &str) -> Result<PathBuf, StoreError> {
        let id = self.run_id(run)?;
        each!(&self.backend, s => s.folder(&id))
    }

    /// The full id of the run RUN names: an id, or the start or end of exactly one. A name
    /// that more runs start or end with is refused, listing them ([`StoreError::Ambiguous`]).
    pub fn run_id(&self, run: &str) -> Result<String, StoreError> {
        let ids = each!(&self.backend, s => s.matching_ids(run))?;
        match ids.as_slice() {
            [] => Err(StoreError::NoSuchRun(run.into())),
            [first, ..] if first == run => Ok(first.clone()),
            [one] => Ok(one.clone()),
            _ => Err(StoreError::Ambiguous {
                name: run.into(),
                study: study_runs(run, &ids).len() == ids.len(),
                matches: ids,
            }),
        }
    }

    /// The ids of the runs of the study folder named NAME (`NAME-r001`...), by run index;
    /// empty when NAME is no study's folder name (or is itself a run's id).
    pub fn study_run_ids(&self, name: &str) -> Result<Vec<String>, StoreError> {
        let ids = each!(&self.backend, s => s.matching_ids(name))?;
        if ids.first().is_some_and(|id| id == name) {
            return Ok(Vec::new());
        }
        let mut runs: Vec<String> = study_runs(name, &ids).into_iter().cloned().collect();
        // By run index (r999 before r1000).
        runs.sort_by_key(|id| (id.len(), id.clone()));
        Ok(runs)
    }

    /// Stores (or replaces) files of the run `run_id`.
    pub fn put_files(&mut self, run_id: &str, files: &RunFiles) -> Result<(), StoreError> {
        each!(&mut self.backend, s => s.put_files(run_id, files))
    }

    /// One file stored of the run `run_id` (None when the store does not keep it).
    pub fn file(&self, run_id: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        each!(&self.backend, s => s.file(run_id, name))
    }

    /// The files stored of the run `run_id` (none when only its folder holds them).
    pub fn files(&self, run_id: &str) -> Result<RunFiles, StoreError> {
        each!(&self.backend, s => s.files(run_id))
    }
}

/// The ids among `ids` of runs of the study folder `name`: `NAME-rNNN`.
fn study_runs<'a>(name: &str, ids: &'a [String]) -> Vec<&'a String> {
    ids.iter()
        .filter(|id| {
            id.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix("-r"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect()
}

/// `a, b, c and 22 more`: at most 8 ids.
fn listed(ids: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut s = ids
        .iter()
        .take(SHOWN)
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    s
}

/// Whether the storlab with this pid (on this machine) still runs.
fn process_alive(pid: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    // The pid may have been reused; treat a running storlab with that pid as alive.
    match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) => comm.trim() == "storlab" || comm.trim().starts_with("storlab"),
        Err(_) => false,
    }
}
