//! The SQLite backend of the results store: an embedded database (WAL journal) in the results
//! folder, beside the run folders it indexes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{Connection, OptionalExtension, params};

use super::{NewRun, RunFiles, RunRow, StoreError, process_alive, schema};
use crate::samples::Sample;
use crate::summary::RunSummary;

pub(super) struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating if needed) the store in the database file `path`.
    pub(super) fn open_file(path: &Path) -> Result<SqliteStore, StoreError> {
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
                Ok(conn) => return Ok(SqliteStore { conn, path }),
            }
        }
    }

    /// Opens the store at `path` to read only: nothing is written into it (no schema made or
    /// brought up to date). A file that is no store, or one of another schema version, is
    /// said, with the way out.
    pub(super) fn open_to_read(path: &Path) -> Result<SqliteStore, StoreError> {
        let path = path.to_path_buf();
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let opened = Connection::open_with_flags(&path, flags).and_then(|conn| {
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            let version: i64 = conn.query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                [],
                |r| r.get(0),
            )?;
            Ok((conn, version))
        });
        match opened {
            Ok((conn, version)) if version == schema::VERSION => Ok(SqliteStore { conn, path }),
            Ok((_, version)) => Err(StoreError::OtherSchema {
                path,
                version,
                reads: schema::VERSION,
            }),
            Err(source) if is_damaged(&source) || is_missing_table(&source) => {
                Err(StoreError::Damaged { path, source })
            }
            Err(source) => Err(store_error(&path, source)),
        }
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        store_error(&self.path, source)
    }

    /// Adds a run as `running`; a run id already there is an error unless `replace`, which
    /// makes the row anew.
    pub(super) fn insert_run(&mut self, r: &NewRun, replace: bool) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO runs (run_id, study, step, run_index, run_count, repetition, parameters, status, started_at, folder, pid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9, ?10){}",
            if replace { schema::UPSERT_RUN } else { "" }
        );
        self.conn
            .execute(
                &sql,
                params![
                    r.run_id,
                    r.study,
                    r.step,
                    r.run_index as i64,
                    r.run_count as i64,
                    r.repetition,
                    crate::redact(r.parameters),
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
    pub(super) fn finish_run(
        &mut self,
        run_id: &str,
        summary: &RunSummary,
    ) -> Result<(), StoreError> {
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
                    crate::redact(&json)
                ],
            )
            .map_err(|e| self.sql(e))?;
        // After the run, per target; then `verify` events, as `TARGET (event NAME)`.
        // Key-value passes: `blocks` holds keys and `first_offsets` the first keys.
        for v in super::verify_rows_of(summary) {
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO verify (run_id, target, class, blocks, first_offsets, kind, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![run_id, v.target, v.class, v.blocks, v.first_offsets, v.kind, v.position],
                )
                .map_err(|e| self.sql(e))?;
        }
        self.store_events(run_id, summary)?;
        self.checkpoint();
        Ok(())
    }

    /// The run's study events and recovery metrics, one row each (replacing any earlier).
    /// Marks the run kept in `folder` `incomplete`, with what is missing: a result file
    /// could not be written. Its folder keeps what was written.
    pub(super) fn mark_incomplete(&mut self, folder: &Path, note: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'incomplete', ended_at = ?2, note = ?3 WHERE folder = ?1",
                params![
                    folder.to_string_lossy(),
                    crate::rfc3339(SystemTime::now()),
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
                schema::INSERT_EVENT,
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
                    crate::redact(&e.detail),
                    crate::redact(&o.stdout),
                    crate::redact(&o.stderr),
                    o.on_failure.map(|f| f.name()),
                    o.bytes.map(|b| b as i64),
                    o.rate_bytes,
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

    /// Stores the run's samples (replacing any earlier), one row each, in one transaction.
    pub(super) fn store_samples(
        &mut self,
        run_id: &str,
        samples: &[Sample],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let sql = |source| store_error(&path, source);
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute("DELETE FROM samples WHERE run_id = ?1", params![run_id])
            .map_err(sql)?;
        {
            let mut insert = tx.prepare(schema::INSERT_SAMPLE).map_err(sql)?;
            for (position, s) in samples.iter().enumerate() {
                insert
                    .execute(params![
                        run_id,
                        position as i64,
                        s.t_ns,
                        s.series,
                        s.value,
                        s.unit
                    ])
                    .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// Verify results of a run: (target, class, blocks, first offsets), as stored.
    pub(super) fn verify_rows(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, u64, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT target, class, blocks, first_offsets FROM verify WHERE run_id = ?1 ORDER BY target, position, rowid")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64, r.get(3)?))
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.sql(e))
    }

    /// All runs, oldest first. A `running` run whose process is gone is shown `interrupted`.
    pub(super) fn list(&self) -> Result<Vec<RunRow>, StoreError> {
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

    /// The stored summary of the run `run_id` (exactly).
    pub(super) fn summary(&self, run_id: &str) -> Result<RunSummary, StoreError> {
        let found: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT summary FROM runs WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some(Some(json)) = found else {
            return Err(StoreError::NoSuchRun(run_id.into()));
        };
        serde_json::from_str(&json).map_err(|source| StoreError::BadSummary {
            run: run_id.into(),
            source,
        })
    }

    /// The folder of the run `run_id` (exactly).
    pub(super) fn folder(&self, run_id: &str) -> Result<PathBuf, StoreError> {
        let found: Option<String> = self
            .conn
            .query_row(
                "SELECT folder FROM runs WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        found
            .map(PathBuf::from)
            .ok_or_else(|| StoreError::NoSuchRun(run_id.into()))
    }

    /// The ids RUN may name (see [`schema::MATCHING_IDS`]).
    pub(super) fn matching_ids(&self, run: &str) -> Result<Vec<String>, StoreError> {
        let (starts, ends) = schema::like_patterns(run);
        let mut stmt = self
            .conn
            .prepare(schema::MATCHING_IDS)
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![run, starts, ends], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<Vec<String>, _>>()
            .map_err(|e| self.sql(e))
    }

    /// Stores (or replaces) the files of a run.
    pub(super) fn put_files(&mut self, run_id: &str, files: &RunFiles) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction()
            .map_err(|e| store_error(&self.path, e))?;
        for (name, bytes) in files {
            tx.execute(schema::UPSERT_FILE, params![run_id, name, bytes])
                .map_err(|e| store_error(&self.path, e))?;
        }
        tx.commit().map_err(|e| store_error(&self.path, e))
    }

    /// The files stored of the run `run_id` (none when its folder holds them).
    pub(super) fn files(&self, run_id: &str) -> Result<RunFiles, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, bytes FROM run_files WHERE run_id = ?1")
            .map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params![run_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<RunFiles, _>>()
            .map_err(|e| self.sql(e))
    }

    pub(super) fn file(&self, run_id: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .query_row(
                "SELECT bytes FROM run_files WHERE run_id = ?1 AND name = ?2",
                params![run_id, name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql(e))
    }
}

/// Opens the database and brings its schema to the newest version (see [`schema`]), one
/// storlab at a time: the versions are applied in a transaction that holds the write lock.
fn open_at(path: &Path) -> Result<Connection, rusqlite::Error> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(schema::VERSIONS_TABLE)?;
    let current: i64 = tx.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_version",
        [],
        |r| r.get(0),
    )?;
    for version in current + 1..=schema::VERSION {
        for statement in schema::statements(version) {
            tx.execute_batch(&schema::for_sqlite(statement))?;
        }
        if version == 1 {
            // Stores made before key-value verification: their verify rows are block ones.
            // Stores made before `incomplete` runs: no note. Stores made before events
            // recorded what their failure does (`on-failure`).
            add_column(&tx, "verify", "kind", "TEXT NOT NULL DEFAULT 'block'")?;
            add_column(&tx, "runs", "note", "TEXT")?;
            add_column(&tx, "events", "on_failure", "TEXT")?;
        }
        tx.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
            params![version, crate::rfc3339(SystemTime::now())],
        )?;
    }
    tx.commit()?;
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
    } else if is_damaged(&source) {
        // "database disk image is malformed" met by a statement, not at the open.
        StoreError::Damaged { path, source }
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

/// "no such table": a database that is not a storlab store (or an empty file).
fn is_missing_table(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(_, Some(m)) if m.starts_with("no such table"))
}

fn is_damaged(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::STORE_FILE;

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
        let path = dir.path().join(STORE_FILE);
        let store = SqliteStore::open_file(&path).unwrap();
        assert!(
            store
                .conn
                .prepare("SELECT on_failure FROM events LIMIT 0")
                .is_ok()
        );
        // Opening it again does not add the column twice, nor apply a version twice.
        drop(store);
        let store = SqliteStore::open_file(&path).unwrap();
        let versions: Vec<i64> = store
            .conn
            .prepare("SELECT version FROM schema_version ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(versions, (1..=schema::VERSION).collect::<Vec<_>>());
    }

    /// A name resolves to one run only: its id, or the start or end of exactly one; more are
    /// refused with the matches; a study's folder name selects its runs; LIKE's wildcards are
    /// taken literally.
    #[test]
    fn a_name_of_several_runs_is_refused_and_a_study_name_selects_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = SqliteStore::open_file(&dir.path().join(STORE_FILE)).unwrap();
        for (i, id) in [
            "a-r001", "a-r002", "b-r001", "ab-r001", "c_1-r001", "d-r001", "d-r002",
        ]
        .iter()
        .enumerate()
        {
            sqlite
                .conn
                .execute(
                    "INSERT INTO runs (run_id, study, step, run_index, run_count, repetition, parameters, status, started_at, folder, pid) VALUES (?1, 's', 'x', 1, 1, 1, '', 'ok', ?2, ?1, 0)",
                    params![id, format!("2026-11-29T00:00:0{i}Z")],
                )
                .unwrap();
        }
        let store = crate::store::Store {
            backend: crate::store::Backend::Sqlite(sqlite),
        };
        assert_eq!(store.run_id("a-r001").unwrap(), "a-r001");
        assert_eq!(store.run_id("b-r").unwrap(), "b-r001");
        assert_eq!(store.folder("ab-").unwrap(), PathBuf::from("ab-r001"));
        match store.run_id("r001") {
            Err(StoreError::Ambiguous { matches, study, .. }) => {
                // The newest first.
                assert_eq!(
                    matches,
                    ["d-r001", "c_1-r001", "ab-r001", "b-r001", "a-r001"]
                );
                assert!(!study);
            }
            other => panic!("{other:?}"),
        }
        let e = store.run_id("a").unwrap_err();
        assert!(
            matches!(e, StoreError::Ambiguous { study: false, .. }),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("`a` names 3 runs:") && e.contains("`ab-r001`"),
            "{e}"
        );
        let e = store.run_id("a-r00").unwrap_err().to_string();
        assert!(e.contains("`a-r00` names 2 runs:"), "{e}");
        let e = store.run_id("d").unwrap_err();
        assert!(
            matches!(e, StoreError::Ambiguous { study: true, .. }),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("`d` names 2 runs of one study: `d-r002`, `d-r001`;"),
            "{e}"
        );
        // `ab-r001` starts with `a` too, but is another study's run.
        assert_eq!(store.study_run_ids("a").unwrap(), ["a-r001", "a-r002"]);
        assert!(store.study_run_ids("a-r001").unwrap().is_empty());
        assert!(store.study_run_ids("zz").unwrap().is_empty());
        assert_eq!(store.run_id("c_").unwrap(), "c_1-r001");
        for pattern in ["%", "_-r001", "c%", "a_r001"] {
            assert!(
                matches!(store.run_id(pattern), Err(StoreError::NoSuchRun(_))),
                "{pattern}"
            );
        }
    }

    /// Opened to read, a store is never written: an empty file stays empty (said damaged),
    /// one of an older schema is said, not brought up to date; a current one reads.
    #[test]
    fn a_store_opened_to_read_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STORE_FILE);
        std::fs::write(&path, b"").unwrap();
        let e = SqliteStore::open_to_read(&path).err().expect("empty");
        assert!(matches!(e, StoreError::Damaged { .. }), "{e:?}");
        assert!(e.to_string().contains("storlab results reindex"), "{e}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        drop(SqliteStore::open_file(&path).unwrap());
        SqliteStore::open_to_read(&path)
            .unwrap()
            .conn
            .execute("DELETE FROM schema_version WHERE version >= 2", [])
            .expect_err("read only");
        {
            let c = Connection::open(&path).unwrap();
            c.execute("DELETE FROM schema_version WHERE version >= 2", [])
                .unwrap();
        }
        let e = SqliteStore::open_to_read(&path).err().expect("older");
        assert!(
            e.to_string().contains("schema version 1")
                && e.to_string().contains("storlab results list"),
            "{e}"
        );
    }

    #[test]
    fn a_runs_samples_replace_those_stored_before() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open_file(&dir.path().join(STORE_FILE)).unwrap();
        let sample = |t_ns: i64, value: f64| Sample {
            t_ns,
            series: "node1.cpu".into(),
            value,
            unit: "cpus".into(),
        };
        store
            .store_samples("r1", &[sample(1, 0.5), sample(2, 0.25)])
            .unwrap();
        store.store_samples("r1", &[sample(-5, 0.75)]).unwrap();
        store.store_samples("r2", &[sample(3, 1.0)]).unwrap();
        let rows: Vec<(i64, i64, String, f64, String)> = store
            .conn
            .prepare("SELECT position, t_ns, series, value, unit FROM samples WHERE run_id = 'r1'")
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [(0, -5, "node1.cpu".into(), 0.75, "cpus".into())]);
    }

    #[test]
    fn a_runs_files_are_stored_once_however_often_put() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open_file(&dir.path().join(STORE_FILE)).unwrap();
        let files: RunFiles = [("summary.json".to_string(), b"{}".to_vec())].into();
        store.put_files("r1", &files).unwrap();
        let files: RunFiles = [("summary.json".to_string(), b"{\"a\":1}".to_vec())].into();
        store.put_files("r1", &files).unwrap();
        assert_eq!(store.files("r1").unwrap(), files);
        assert!(store.files("r2").unwrap().is_empty());
    }
}
