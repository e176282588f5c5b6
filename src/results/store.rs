//! The results store: an embedded SQLite database (WAL journal) indexing every run with its
//! status and summary. A run is inserted as `running` before it starts and updated when it
//! ends, so a storlab killed mid-run leaves a readable store with that run shown as
//! `interrupted`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{Connection, OptionalExtension, params};

use crate::results::summary::RunSummary;
use crate::study::plan::RunPlan;

pub const STORE_FILE: &str = "results.db";

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
    #[error("no run `{0}` in the results store (see `storlab results list`)")]
    NoSuchRun(String),
    #[error("run `{run}` has a summary that cannot be read: {source}")]
    BadSummary {
        run: String,
        source: serde_json::Error,
    },
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

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store in a results folder. Several storlab processes
    /// may open one store at once: a database another one is creating or locking is waited
    /// for (up to 30 s), never an error.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        Store::open_file(&dir.join(STORE_FILE))
    }

    /// Opens (creating if needed) the store in the database file `path`.
    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        let path = path.to_path_buf();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match open_at(&path) {
                Err(source) if is_busy(&source) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(source) if is_damaged(&source) => {
                    return Err(StoreError::Damaged { path, source });
                }
                Err(source) => return Err(store_error(&path, source)),
                Ok(conn) => return Ok(Store { conn, path }),
            }
        }
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        store_error(&self.path, source)
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
            started_at: &crate::results::rfc3339(started),
            folder,
            pid: std::process::id(),
        })
    }

    /// Adds a run as `running`; a run id already there is an error, never replaced.
    pub fn insert_run(&mut self, r: &NewRun) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (run_id, study, step, run_index, run_count, repetition, parameters, status, started_at, folder, pid)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9, ?10)",
                params![
                    r.run_id,
                    r.study,
                    r.step,
                    r.run_index as i64,
                    r.run_count as i64,
                    r.repetition,
                    crate::results::redact(r.parameters),
                    r.started_at,
                    r.folder.to_string_lossy(),
                    r.pid
                ],
            )
            .map_err(|e| self.sql(e))?;
        self.checkpoint();
        Ok(())
    }

    /// Copies the journal back into the database, so that the next write reuses the
    /// journal's room from its start: marking a run incomplete on a full disk then needs no
    /// new room. Not a result: a checkpoint that cannot run now runs later.
    fn checkpoint(&self) {
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    }

    /// Stores a run's summary and final status.
    pub fn finish_run(&mut self, run_id: &str, summary: &RunSummary) -> Result<(), StoreError> {
        let json = serde_json::to_string(summary).map_err(|source| StoreError::BadSummary {
            run: run_id.into(),
            source,
        })?;
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, ended_at = ?3, summary = ?4 WHERE run_id = ?1",
                params![
                    run_id,
                    summary.status.name(),
                    summary.ended_at,
                    crate::results::redact(&json)
                ],
            )
            .map_err(|e| self.sql(e))?;
        // After the run, per target; then `verify` events, as `TARGET (event NAME)`.
        // Key-value passes: `blocks` holds keys and `first_offsets` the first keys.
        let event_passes = summary.events.iter().filter_map(|e| {
            let o = e.outcome.as_ref()?;
            let v = o.verify.as_deref()?;
            Some((format!("{} (event {})", v.target(), o.name), v))
        });
        let passes: Vec<(String, &crate::verify::Verified)> = summary
            .targets
            .iter()
            .filter_map(|t| t.verify.as_ref().map(|v| (t.name.clone(), v)))
            .chain(event_passes)
            .collect();
        for (target, v) in passes {
            for (class, count, first) in v.class_rows() {
                self.conn
                    .execute(
                        "INSERT OR REPLACE INTO verify (run_id, target, class, blocks, first_offsets, kind) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![run_id, target, class, count as i64, first, v.kind()],
                    )
                    .map_err(|e| self.sql(e))?;
            }
        }
        self.store_events(run_id, summary)?;
        self.checkpoint();
        Ok(())
    }

    /// The run's study events and recovery metrics, one row each (replacing any earlier).
    /// Marks the run kept in `folder` `incomplete`, with what is missing: a result file
    /// could not be written. Its folder keeps what was written.
    pub fn mark_incomplete(&mut self, folder: &Path, note: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'incomplete', ended_at = ?2, note = ?3 WHERE folder = ?1",
                params![
                    folder.to_string_lossy(),
                    crate::results::rfc3339(SystemTime::now()),
                    note
                ],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    fn store_events(&mut self, run_id: &str, summary: &RunSummary) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(|e| StoreError::Sql {
            path: self.path.clone(),
            source: e,
        })?;
        let sql = |source| StoreError::Sql {
            path: self.path.clone(),
            source,
        };
        tx.execute("DELETE FROM events WHERE run_id = ?1", params![run_id])
            .map_err(sql)?;
        tx.execute("DELETE FROM recovery WHERE run_id = ?1", params![run_id])
            .map_err(sql)?;
        let studied = summary
            .events
            .iter()
            .filter_map(|e| e.outcome.as_ref().map(|o| (e, o)));
        for (position, (e, o)) in studied.enumerate() {
            tx.execute(
                "INSERT INTO events (run_id, position, name, action, status, start_ns, end_ns, duration_seconds, exit_code, pid, detail, stdout, stderr, on_failure)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    run_id,
                    position as i64,
                    o.name,
                    e.kind,
                    o.status.name(),
                    o.start_ns,
                    o.end_ns,
                    o.duration_seconds,
                    o.exit_code,
                    o.pid,
                    crate::results::redact(&e.detail),
                    crate::results::redact(&o.stdout),
                    crate::results::redact(&o.stderr),
                    o.on_failure.map(|f| f.name()),
                ],
            )
            .map_err(sql)?;
        }
        for r in &summary.recovery {
            let errors: Vec<String> = r
                .errors_during_outage
                .iter()
                .map(|(k, n)| format!("{k}:{n}"))
                .collect();
            tx.execute(
                "INSERT OR REPLACE INTO recovery (run_id, event, event_seconds, interval_seconds, baseline_rate_ops, dip_min_rate_ops, dip_mean_rate_ops, outage_seconds, time_to_first_success_seconds, recovered, time_to_recover_seconds, errors_during_outage, note)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    run_id,
                    r.event,
                    r.event_seconds,
                    r.interval_seconds,
                    r.baseline_rate_ops,
                    r.dip_min_rate_ops,
                    r.dip_mean_rate_ops,
                    r.outage_seconds,
                    r.time_to_first_success_seconds,
                    r.recovered,
                    r.time_to_recover_seconds,
                    errors.join(";"),
                    r.note,
                ],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }

    /// Verify results of a run: (target, class, blocks, first offsets), as stored.
    pub fn verify_rows(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, u64, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT target, class, blocks, first_offsets FROM verify WHERE run_id = ?1 ORDER BY target, rowid")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64, r.get(3)?))
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// All runs, oldest first. A `running` run whose process is gone is shown `interrupted`.
    pub fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_id, study, step, run_index, run_count, parameters, status, started_at, folder, pid, summary, note FROM runs ORDER BY started_at, run_index")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([], |r| {
                let status: String = r.get(6)?;
                let pid: i64 = r.get(9)?;
                let summary: Option<String> = r.get(10)?;
                let rate_ops = summary
                    .and_then(|s| serde_json::from_str::<RunSummary>(&s).ok())
                    .map(|s| s.total.rate_ops);
                Ok(RunRow {
                    run_id: r.get(0)?,
                    study: r.get(1)?,
                    step: r.get(2)?,
                    run_index: r.get(3)?,
                    run_count: r.get(4)?,
                    parameters: r.get(5)?,
                    status: if status == "running" && !process_alive(pid) {
                        "interrupted".into()
                    } else {
                        status
                    },
                    started_at: r.get(7)?,
                    folder: r.get(8)?,
                    rate_ops,
                    note: r.get::<_, Option<String>>(11)?.unwrap_or_default(),
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// A run's stored summary. Accepts a full run id or a unique suffix/prefix of one.
    pub fn summary(&self, run: &str) -> Result<RunSummary, StoreError> {
        let found: Option<(String, Option<String>)> = self
            .conn
            .query_row(
                "SELECT run_id, summary FROM runs WHERE run_id = ?1 OR run_id LIKE ?1 || '%' OR run_id LIKE '%' || ?1 ORDER BY started_at DESC LIMIT 1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((id, Some(json))) = found else {
            return Err(StoreError::NoSuchRun(run.into()));
        };
        serde_json::from_str(&json).map_err(|source| StoreError::BadSummary { run: id, source })
    }

    /// A run's folder. Accepts a full run id or a unique suffix/prefix of one, like
    /// [`Store::summary`].
    pub fn folder(&self, run: &str) -> Result<PathBuf, StoreError> {
        let found: Option<String> = self
            .conn
            .query_row(
                "SELECT folder FROM runs WHERE run_id = ?1 OR run_id LIKE ?1 || '%' OR run_id LIKE '%' || ?1 ORDER BY started_at DESC LIMIT 1",
                params![run],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        found
            .map(PathBuf::from)
            .ok_or_else(|| StoreError::NoSuchRun(run.into()))
    }
}

/// Opens the database and makes its tables (the schema's changes applied to older stores).
fn open_at(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS runs (
                run_id TEXT PRIMARY KEY,
                study TEXT NOT NULL,
                step TEXT NOT NULL,
                run_index INTEGER NOT NULL,
                run_count INTEGER NOT NULL,
                repetition INTEGER NOT NULL,
                parameters TEXT NOT NULL,
                status TEXT NOT NULL,
                started_at TEXT NOT NULL,
                ended_at TEXT,
                folder TEXT NOT NULL,
                pid INTEGER NOT NULL,
                summary TEXT,
                note TEXT
            );
            CREATE TABLE IF NOT EXISTS events (
                run_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                name TEXT NOT NULL,
                action TEXT NOT NULL,
                status TEXT NOT NULL,
                start_ns INTEGER NOT NULL,
                end_ns INTEGER NOT NULL,
                duration_seconds REAL NOT NULL,
                exit_code INTEGER,
                pid INTEGER,
                detail TEXT NOT NULL,
                stdout TEXT NOT NULL,
                stderr TEXT NOT NULL,
                on_failure TEXT,
                PRIMARY KEY (run_id, position)
            );
            CREATE TABLE IF NOT EXISTS recovery (
                run_id TEXT NOT NULL,
                event TEXT NOT NULL,
                event_seconds REAL NOT NULL,
                interval_seconds REAL NOT NULL,
                baseline_rate_ops REAL,
                dip_min_rate_ops REAL,
                dip_mean_rate_ops REAL,
                outage_seconds REAL NOT NULL,
                time_to_first_success_seconds REAL,
                recovered INTEGER NOT NULL,
                time_to_recover_seconds REAL,
                errors_during_outage TEXT NOT NULL,
                note TEXT NOT NULL,
                PRIMARY KEY (run_id, event)
            );
            CREATE TABLE IF NOT EXISTS verify (
                run_id TEXT NOT NULL,
                target TEXT NOT NULL,
                class TEXT NOT NULL,
                blocks INTEGER NOT NULL,
                first_offsets TEXT NOT NULL,
                kind TEXT NOT NULL DEFAULT 'block',
                PRIMARY KEY (run_id, target, class)
            );",
    )?;
    // Stores made before key-value verification: their verify rows are block ones. Stores
    // made before `incomplete` runs: no note. (Another storlab may add a column first.)
    add_column(&conn, "verify", "kind", "TEXT NOT NULL DEFAULT 'block'")?;
    add_column(&conn, "runs", "note", "TEXT")?;
    // Stores made before events recorded what their failure does (`on-failure`).
    add_column(&conn, "events", "on_failure", "TEXT")?;
    Ok(conn)
}

/// Adds a column that an older store lacks.
fn add_column(conn: &Connection, table: &str, column: &str, decl: &str) -> rusqlite::Result<()> {
    if conn
        .prepare(&format!("SELECT {column} FROM {table} LIMIT 0"))
        .is_ok()
    {
        return Ok(());
    }
    match conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}")) {
        Err(e) if e.to_string().contains("duplicate column") => Ok(()),
        r => r,
    }
}

/// SQLite's error, said as what it means for the user: a full disk (SQLITE_FULL, or no room
/// to grow the shared-memory file of the journal: SQLITE_IOERR_SHMSIZE) or another one.
fn store_error(path: &Path, source: rusqlite::Error) -> StoreError {
    const SQLITE_IOERR_SHMSIZE: std::ffi::c_int = 10 | (19 << 8);
    let full = match &source {
        rusqlite::Error::SqliteFailure(e, _) => {
            e.code == rusqlite::ErrorCode::DiskFull || e.extended_code == SQLITE_IOERR_SHMSIZE
        }
        _ => false,
    };
    let path = path.to_path_buf();
    if full {
        StoreError::Full { path, source }
    } else {
        StoreError::Sql { path, source }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn is_damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_made_before_on_failure_gains_its_column() {
        let dir = tempfile::tempdir().unwrap();
        {
            let old = Connection::open(dir.path().join(STORE_FILE)).unwrap();
            old.execute_batch(
                "CREATE TABLE events (run_id TEXT NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL, action TEXT NOT NULL, status TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_seconds REAL NOT NULL, exit_code INTEGER, pid INTEGER, detail TEXT NOT NULL, stdout TEXT NOT NULL, stderr TEXT NOT NULL, PRIMARY KEY (run_id, position));",
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert!(
            store
                .conn
                .prepare("SELECT on_failure FROM events LIMIT 0")
                .is_ok()
        );
        // Opening it again does not add the column twice.
        drop(store);
        Store::open(dir.path()).unwrap();
    }
}
