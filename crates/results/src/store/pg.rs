//! The PostgreSQL backend of the results store, which a lab's machines share. Its schema is
//! the SQLite one ([`schema`]), applied under an advisory lock so that two storlab processes
//! opening a new database at once apply each version once.
//!
//! Every call has a deadline: connecting (the socket and the whole handshake) within the URL's
//! `connect_timeout` (default 10 s), each statement within `STORLAB_STORE_TIMEOUT` seconds
//! (default 30, [`STATEMENT_DEADLINE`]). A server that
//! accepts the connection and never answers (stopped, hung, a half-open path) is unreachable
//! once its deadline passes, as one that refuses the connection: the study runs on and its runs
//! wait in their folders. The client is tokio-postgres on a runtime of its own, each call
//! driven under a timer, because the blocking `postgres` client waits without a limit.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

use super::{NewRun, PgUrl, RunFiles, RunRow, StoreError, process_alive, schema};
use crate::redact;
use crate::samples::Sample;
use crate::summary::RunSummary;

/// How long connecting may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement (or a transaction's begin or commit) may wait for its answer, unless
/// `STORLAB_STORE_TIMEOUT` (seconds) says.
pub const STATEMENT_DEADLINE: Duration = Duration::from_secs(30);

/// The environment variable that sets the statement deadline, in seconds.
pub const TIMEOUT_ENV: &str = "STORLAB_STORE_TIMEOUT";

/// The statement deadline: `STORLAB_STORE_TIMEOUT` seconds when set, else [`STATEMENT_DEADLINE`].
fn statement_deadline() -> Result<Duration, String> {
    let Some(text) = std::env::var_os(TIMEOUT_ENV) else {
        return Ok(STATEMENT_DEADLINE);
    };
    let text = text.to_string_lossy();
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{TIMEOUT_ENV}={text}: give seconds, more than 0 and at most 86400"))
}

/// The advisory lock held while the schema is brought up to date (any number, the same in
/// every storlab).
const MIGRATION_LOCK: i64 = 0x5354_4f52_4c41_4201;

pub(super) struct PgStore {
    /// Drives the client and its connection, one call at a time.
    runtime: tokio::runtime::Runtime,
    /// Transactions need the client mutably; the store's readers take `&self`.
    client: RefCell<Client>,
    /// Shown in errors: the URL, redacted.
    location: String,
    /// Set when a call outlived its deadline: the connection is in an unknown state, so every
    /// later call is unreachable at once (this text) instead of waiting again.
    gone: RefCell<Option<String>>,
    /// How long a statement may wait for its answer.
    deadline: Duration,
}

/// An error and its causes, one line, redacted.
fn error_text(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let s = cause.to_string();
        if !text.contains(&s) {
            text = format!("{text}: {s}");
        }
        source = cause.source();
    }
    redact(&text)
}

/// Whether the error is the connection's, not a statement's: no answer from the server, or
/// the server ending the session (SQLSTATE class 08, connection exception; class 57,
/// operator intervention: a shutdown, a terminated backend).
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    match e.code() {
        None => e.as_db_error().is_none(),
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || code.starts_with("57")
        }
    }
}

/// A URL without a password takes it as libpq does (see [`super::pgpass`]); without a user,
/// the login name (`USER`), as libpq does. A password file skipped for its permissions is
/// said on stderr, as libpq says it.
fn with_libpq_password(config: &mut tokio_postgres::Config) {
    if config.get_user().is_none()
        && let Some(user) = std::env::var_os("USER")
    {
        config.user(user.to_string_lossy().as_ref());
    }
    if config.get_password().is_some() {
        return;
    }
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    let user = config.get_user().unwrap_or_default().to_string();
    let database = config.get_dbname().unwrap_or(&user).to_string();
    let wanted = super::pgpass::Wanted {
        host: &host,
        port: config.get_ports().first().copied().unwrap_or(5432),
        database: &database,
        user: &user,
    };
    let mut warnings = Vec::new();
    let found = super::pgpass::find(&wanted, &mut warnings);
    for w in warnings {
        eprintln!("storlab: warning: {w}");
    }
    if let Some((_, password)) = found {
        config.password(password);
    }
}

/// Connects with `tls` within `deadline` (the socket and the whole handshake), and leaves the
/// connection to `runtime`, which polls it whenever a call is driven.
fn connect_with<T>(
    runtime: &tokio::runtime::Runtime,
    config: &tokio_postgres::Config,
    deadline: Duration,
    tls: T,
) -> Result<Client, String>
where
    T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>,
    T::Stream: Send + 'static,
{
    // The timer is made inside the runtime: tokio's timers need its context.
    let (client, connection) = runtime
        .block_on(async { tokio::time::timeout(deadline, config.connect(tls)).await })
        .map_err(|_| {
            format!(
                "no answer within {} s of connecting (connect_timeout)",
                deadline.as_secs_f64()
            )
        })?
        .map_err(|e| error_text(&e))?;
    runtime.spawn(connection);
    Ok(client)
}

impl PgStore {
    /// Connects to read only: the schema is not touched and the session is read-only.
    pub(super) fn connect_to_read(url: &PgUrl) -> Result<PgStore, StoreError> {
        let store = PgStore::open(url)?;
        let client = store.client.borrow();
        store.call(client.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"))?;
        drop(client);
        Ok(store)
    }

    /// Connects and brings the schema to the newest version.
    pub(super) fn connect(url: &PgUrl) -> Result<PgStore, StoreError> {
        let store = PgStore::open(url)?;
        store.migrate()?;
        Ok(store)
    }

    fn open(url: &PgUrl) -> Result<PgStore, StoreError> {
        let location = url.to_string();
        let bad = |detail: String| StoreError::BadLocation {
            location: location.clone(),
            detail,
        };
        let (tokio_url, tls) = super::pg_tls::split(url.secret_text()).map_err(bad)?;
        let mut config: tokio_postgres::Config =
            tokio_url
                .parse()
                .map_err(|e: tokio_postgres::Error| StoreError::BadLocation {
                    location: location.clone(),
                    detail: error_text(&e),
                })?;
        with_libpq_password(&mut config);
        let statement_deadline =
            statement_deadline().map_err(|detail| StoreError::BadLocation {
                location: location.clone(),
                detail,
            })?;
        let deadline = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        config.connect_timeout(deadline);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| StoreError::Unreachable {
                location: location.clone(),
                detail: format!("starting the client: {e}"),
            })?;
        let unreachable = |detail: String| StoreError::Unreachable {
            location: location.clone(),
            detail,
        };
        let client = if tls.mode == super::pg_tls::SslMode::Disable {
            connect_with(&runtime, &config, deadline, NoTls)
        } else {
            let rustls = super::pg_tls::client_config(&tls).map_err(bad)?;
            connect_with(
                &runtime,
                &config,
                deadline,
                tokio_postgres_rustls::MakeRustlsConnect::new(rustls),
            )
        }
        .map_err(unreachable)?;
        let store = PgStore {
            runtime,
            client: RefCell::new(client),
            location,
            gone: RefCell::new(None),
            deadline: statement_deadline,
        };
        Ok(store)
    }

    /// Drives one call of the client to its answer, at most the statement deadline.
    fn call<T>(
        &self,
        future: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StoreError> {
        if let Some(detail) = self.gone.borrow().clone() {
            return Err(StoreError::Unreachable {
                location: self.location.clone(),
                detail,
            });
        }
        match self
            .runtime
            .block_on(async { tokio::time::timeout(self.deadline, future).await })
        {
            Ok(answer) => answer.map_err(|e| self.pg(e)),
            Err(_) => {
                let detail = format!(
                    "no answer within {} s to a statement ({TIMEOUT_ENV}; a stopped or hung server, or a broken path)",
                    self.deadline.as_secs_f64()
                );
                *self.gone.borrow_mut() = Some(detail.clone());
                Err(StoreError::Unreachable {
                    location: self.location.clone(),
                    detail,
                })
            }
        }
    }

    fn client_mut(&self) -> RefMut<'_, Client> {
        self.client.borrow_mut()
    }

    /// A database's refusal, or a connection that broke (unreachable).
    fn pg(&self, e: tokio_postgres::Error) -> StoreError {
        let (location, detail) = (self.location.clone(), error_text(&e));
        if connection_lost(&e) {
            StoreError::Unreachable { location, detail }
        } else {
            StoreError::Postgres { location, detail }
        }
    }

    /// Brings the schema to the newest version, one storlab at a time.
    fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client_mut();
        let tx = self.call(client.transaction())?;
        self.call(tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]))?;
        self.call(tx.batch_execute(schema::VERSIONS_TABLE))?;
        let current: i64 = self
            .call(tx.query_one(
                "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_version",
                &[],
            ))?
            .get(0);
        for version in current + 1..=schema::VERSION {
            for statement in schema::statements(version) {
                self.call(tx.batch_execute(statement))?;
            }
            self.call(tx.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
                &[&version, &crate::rfc3339(SystemTime::now())],
            ))?;
        }
        self.call(tx.commit())
    }

    fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        let client = self.client.borrow();
        self.call(client.execute(schema::for_postgres(sql).as_str(), params))
    }

    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, StoreError> {
        let client = self.client.borrow();
        self.call(client.query(schema::for_postgres(sql).as_str(), params))
    }

    pub(super) fn insert_run(&mut self, r: &NewRun, replace: bool) -> Result<(), StoreError> {
        let sql = format!(
            "INSERT INTO runs (run_id, study, step, run_index, run_count, repetition, parameters, status, started_at, folder, pid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9, ?10){}",
            if replace { schema::UPSERT_RUN } else { "" }
        );
        self.execute(
            &sql,
            &[
                &r.run_id,
                &r.study,
                &r.step,
                &(r.run_index as i64),
                &(r.run_count as i64),
                &i64::from(r.repetition),
                &redact(r.parameters),
                &r.started_at,
                &r.folder.to_string_lossy().to_string(),
                &i64::from(r.pid),
            ],
        )?;
        Ok(())
    }

    /// Stores a run's summary, status, verify rows, events and recovery metrics in one
    /// transaction.
    pub(super) fn finish_run(
        &mut self,
        run_id: &str,
        summary: &RunSummary,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(summary).map_err(|source| StoreError::BadSummary {
            run: run_id.into(),
            source,
        })?;
        let mut client = self.client_mut();
        let tx = self.call(client.transaction())?;
        let exec = |sql: &str, params: &[&(dyn ToSql + Sync)]| {
            self.call(tx.execute(schema::for_postgres(sql).as_str(), params))
                .map(|_| ())
        };
        exec(
            "UPDATE runs SET status = ?2, ended_at = ?3, summary = ?4 WHERE run_id = ?1",
            &[
                &run_id,
                &summary.status.name(),
                &summary.ended_at,
                &redact(&json),
            ],
        )?;
        for v in super::verify_rows_of(summary) {
            exec(
                "INSERT INTO verify (run_id, target, class, blocks, first_offsets, kind, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (run_id, target, class) DO UPDATE SET blocks = excluded.blocks, first_offsets = excluded.first_offsets, kind = excluded.kind, position = excluded.position",
                &[&run_id, &v.target, &v.class, &v.blocks, &v.first_offsets, &v.kind, &v.position],
            )?;
        }
        exec("DELETE FROM events WHERE run_id = ?1", &[&run_id])?;
        exec("DELETE FROM recovery WHERE run_id = ?1", &[&run_id])?;
        let studied = summary
            .events
            .iter()
            .filter_map(|e| e.outcome.as_ref().map(|o| (e, o)));
        for (position, (e, o)) in studied.enumerate() {
            exec(
                schema::INSERT_EVENT,
                &[
                    &run_id,
                    &(position as i64),
                    &o.name,
                    &e.kind,
                    &o.status.name(),
                    &o.start_ns,
                    &o.end_ns,
                    &o.duration_seconds,
                    &o.exit_code.map(i64::from),
                    &o.pid.map(i64::from),
                    &redact(&e.detail),
                    &redact(&o.stdout),
                    &redact(&o.stderr),
                    &o.on_failure.map(|f| f.name()),
                    &o.bytes.map(|b| b as i64),
                    &o.rate_bytes,
                ],
            )?;
        }
        for r in &summary.recovery {
            let errors: Vec<String> = r
                .errors_during_outage
                .iter()
                .map(|(k, n)| format!("{k}:{n}"))
                .collect();
            // A later metric of the same event replaces an earlier one, as in SQLite.
            exec(
                "DELETE FROM recovery WHERE run_id = ?1 AND event = ?2",
                &[&run_id, &r.event],
            )?;
            exec(
                "INSERT INTO recovery (run_id, event, event_seconds, interval_seconds, baseline_rate_ops, dip_min_rate_ops, dip_mean_rate_ops, outage_seconds, time_to_first_success_seconds, recovered, time_to_recover_seconds, errors_during_outage, note)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                &[
                    &run_id,
                    &r.event,
                    &r.event_seconds,
                    &r.interval_seconds,
                    &r.baseline_rate_ops,
                    &r.dip_min_rate_ops,
                    &r.dip_mean_rate_ops,
                    &r.outage_seconds,
                    &r.time_to_first_success_seconds,
                    &i64::from(r.recovered),
                    &r.time_to_recover_seconds,
                    &errors.join(";"),
                    &r.note,
                ],
            )?;
        }
        self.call(tx.commit())
    }

    pub(super) fn mark_incomplete(&mut self, folder: &Path, note: &str) -> Result<(), StoreError> {
        self.execute(
            "UPDATE runs SET status = 'incomplete', ended_at = ?2, note = ?3 WHERE folder = ?1",
            &[
                &folder.to_string_lossy().to_string(),
                &crate::rfc3339(SystemTime::now()),
                &note,
            ],
        )?;
        Ok(())
    }

    pub(super) fn verify_rows(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, String, u64, String)>, StoreError> {
        let rows = self.query(
            "SELECT target, class, blocks, first_offsets FROM verify WHERE run_id = ?1 ORDER BY target, position",
            &[&run_id],
        )?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2) as u64, r.get(3)))
            .collect())
    }

    /// All runs, oldest first. A `running` run whose folder is on this machine and whose
    /// process is gone is shown `interrupted` (one run elsewhere is shown as it says).
    pub(super) fn list(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.query(
            "SELECT run_id, study, step, run_index, run_count, parameters, status, started_at, folder, pid, summary, note FROM runs ORDER BY started_at, run_index",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let status: String = r.get(6);
                let folder: String = r.get(8);
                let summary: Option<String> = r.get(10);
                let here = Path::new(&folder).exists();
                RunRow {
                    run_id: r.get(0),
                    study: r.get(1),
                    step: r.get(2),
                    run_index: r.get(3),
                    run_count: r.get(4),
                    parameters: r.get(5),
                    status: if status == "running" && here && !process_alive(r.get(9)) {
                        "interrupted".into()
                    } else {
                        status
                    },
                    started_at: r.get(7),
                    folder,
                    rate_ops: summary
                        .and_then(|s| serde_json::from_str::<RunSummary>(&s).ok())
                        .map(|s| s.total.rate_ops),
                    note: r.get::<_, Option<String>>(11).unwrap_or_default(),
                }
            })
            .collect())
    }

    /// The stored summary of the run `run_id` (exactly).
    pub(super) fn summary(&self, run_id: &str) -> Result<RunSummary, StoreError> {
        let rows = self.query("SELECT summary FROM runs WHERE run_id = ?1", &[&run_id])?;
        let json: Option<String> = rows
            .first()
            .ok_or_else(|| StoreError::NoSuchRun(run_id.into()))?
            .get(0);
        let json = json.ok_or_else(|| StoreError::NoSuchRun(run_id.into()))?;
        serde_json::from_str(&json).map_err(|source| StoreError::BadSummary {
            run: run_id.into(),
            source,
        })
    }

    /// The folder of the run `run_id` (exactly).
    pub(super) fn folder(&self, run_id: &str) -> Result<PathBuf, StoreError> {
        let rows = self.query("SELECT folder FROM runs WHERE run_id = ?1", &[&run_id])?;
        let folder: String = rows
            .first()
            .ok_or_else(|| StoreError::NoSuchRun(run_id.into()))?
            .get(0);
        Ok(PathBuf::from(folder))
    }

    /// The ids RUN may name (see [`schema::MATCHING_IDS`]).
    pub(super) fn matching_ids(&self, run: &str) -> Result<Vec<String>, StoreError> {
        let (starts, ends) = schema::like_patterns(run);
        let rows = self.query(schema::MATCHING_IDS, &[&run, &starts, &ends])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub(super) fn put_files(&mut self, run_id: &str, files: &RunFiles) -> Result<(), StoreError> {
        let mut client = self.client_mut();
        let tx = self.call(client.transaction())?;
        let sql = schema::for_postgres(schema::UPSERT_FILE);
        for (name, bytes) in files {
            self.call(tx.execute(sql.as_str(), &[&run_id, name, bytes]))?;
        }
        self.call(tx.commit())
    }

    /// Stores the run's samples (replacing any earlier), one row each, in one transaction.
    pub(super) fn store_samples(
        &mut self,
        run_id: &str,
        samples: &[Sample],
    ) -> Result<(), StoreError> {
        let mut client = self.client_mut();
        let tx = self.call(client.transaction())?;
        let delete = schema::for_postgres("DELETE FROM samples WHERE run_id = ?1");
        self.call(tx.execute(delete.as_str(), &[&run_id]))?;
        let insert = schema::for_postgres(schema::INSERT_SAMPLE);
        for (position, s) in samples.iter().enumerate() {
            let position = position as i64;
            let row: [&(dyn ToSql + Sync); 6] =
                [&run_id, &position, &s.t_ns, &s.series, &s.value, &s.unit];
            self.call(tx.execute(insert.as_str(), &row))?;
        }
        self.call(tx.commit())
    }

    pub(super) fn file(&self, run_id: &str, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.query(
            "SELECT bytes FROM run_files WHERE run_id = ?1 AND name = ?2",
            &[&run_id, &name],
        )?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    pub(super) fn files(&self, run_id: &str) -> Result<RunFiles, StoreError> {
        let rows = self.query(
            "SELECT name, bytes FROM run_files WHERE run_id = ?1",
            &[&run_id],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
