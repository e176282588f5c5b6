//! The `postgres` target: a PostgreSQL server through the `postgres` crate (the synchronous
//! wrapper of tokio-postgres), one connection per worker, as YCSB's JDBC binding: a table
//! (YCSB's `table`, default `usertable`) with YCSB's schema, `YCSB_KEY VARCHAR(255) PRIMARY
//! KEY, FIELD0 TEXT, ..., FIELDn TEXT`, created in `prepare` if missing, and prepared
//! statements for every operation (a statement per field for one-field reads and updates).
//!
//! Keys and values are handed to the driver as `&str` borrowed from the session's buffers;
//! the driver allocates its messages and rows. A read that finds no row, or an update that
//! changes none, is a miss (YCSB's NOT_FOUND). A connection that fails mid-run counts the
//! operation as a `connection` error; the next operation reconnects and prepares again.
//!
//! With `pool-size = N` (`-p db.poolsize=N`) the workers share N connections instead: each
//! operation takes an idle connection (opening one while fewer than N exist, else waiting for
//! one, the wait counting in its latency) and gives it back.
//!
//! YCSB properties (its JDBC binding's): `db.url` (`jdbc:postgresql://host:port/db`, the
//! `jdbc:` prefix optional), `db.user`, `db.passwd`, `db.driver` (must be PostgreSQL's); and
//! storlab's `db.poolsize`.
//!
//! pgbench workloads (`type = "pgbench"`) run pgbench's tables and transactions, their
//! statements on storlab's own blocking client ([`wire`]): see
//! [`pgbench`].

pub mod pgbench;
mod wire;

use std::sync::{Arc, Condvar, Mutex};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls, Statement};
use serde::{Deserialize, Serialize};

use crate::record::{ErrorKind, OpError};
use crate::record::OpKind;
use crate::targets::{
    Capabilities, Completions, Op, OptionError, Overlap, PrepareOptions, Region, Session,
    SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    YcsbBindingError, YcsbStore, claim_value, option_error, ycsb_op,
};
use crate::workload::ycsb::{CoreWorkload, Properties, RecordBuf, YcsbOp};

pub const TYPE: TargetType = TargetType {
    name: "postgres",
    summary: "a PostgreSQL server: YCSB's JDBC schema (usertable: YCSB_KEY, FIELD0..n), or pgbench's tables and transactions",
    options: &[
        (
            "url",
            "postgresql://host:port/database (credentials may be in it or below)",
        ),
        ("user", "user name (default: the URL's)"),
        ("password", "password (default: the URL's)"),
        (
            "pool-size",
            "share N connections among the workers (default: one connection per worker)",
        ),
    ],
    parse,
    ycsb_names: &["jdbc", "postgresql"],
    ycsb_options: Some(ycsb_options),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PostgresConfig {
    #[serde(serialize_with = "crate::targets::serialize_redacted_url")]
    pub url: String,
    pub user: Option<String>,
    #[serde(default, skip_serializing)]
    pub password: Option<String>,
    /// Connections shared by all workers; None: one connection per worker.
    #[serde(default)]
    pub pool_size: Option<u32>,
    /// The shared connections (one pool per target, kept across its runs).
    #[serde(skip)]
    pool: Arc<Pool>,
}

/// Connections shared among workers: a worker takes one for an operation and gives it back.
/// A worker finding none idle opens a new one while fewer than the pool size exist, else waits;
/// the wait is part of the operation's latency, as in any pooled client.
#[derive(Debug, Default)]
struct Pool {
    state: Mutex<PoolState>,
    returned: Condvar,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Conn>,
    /// Connections in existence (idle or taken), including ones being opened.
    live: u32,
}

impl std::fmt::Debug for PoolState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} idle of {} live", self.idle.len(), self.live)
    }
}

impl Pool {
    /// An idle connection, or None: the caller may open one (it counts as live already).
    fn take(&self, size: u32) -> Option<Conn> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(c) = st.idle.pop() {
                return Some(c);
            }
            if st.live < size {
                st.live += 1;
                return None;
            }
            st = self.returned.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Gives a connection back, or None for one that failed (or never opened).
    fn give(&self, conn: Option<Conn>) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match conn {
            Some(c) => st.idle.push(c),
            None => st.live = st.live.saturating_sub(1),
        }
        drop(st);
        self.returned.notify_one();
    }
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: PostgresConfig = table.try_into().map_err(option_error)?;
    if c.pool_size == Some(0) {
        return Err(OptionError {
            key: "pool-size".into(),
            message: "pool-size is at least 1 (leave it out for a connection per worker)".into(),
        });
    }
    c.config().map_err(|e| OptionError {
        key: "url".into(),
        message: format!("not a PostgreSQL connection URL: {e}"),
    })?;
    Ok(TargetConfig::Postgres(c))
}

fn ycsb_options(props: &mut Properties) -> Result<toml::Table, YcsbBindingError> {
    let mut t = toml::Table::new();
    if let Some((v, p)) = claim_value(props, "db.driver") {
        if v != "org.postgresql.Driver" {
            return Err(YcsbBindingError {
                property: p,
                reason: "storlab's JDBC binding speaks to PostgreSQL only (org.postgresql.Driver)"
                    .into(),
            });
        }
    }
    match claim_value(props, "db.url") {
        Some((v, p)) => {
            let url = v.strip_prefix("jdbc:").unwrap_or(&v).to_string();
            if !url.starts_with("postgresql://") && !url.starts_with("postgres://") {
                return Err(YcsbBindingError {
                    property: p,
                    reason: "expected jdbc:postgresql://host:port/database".into(),
                });
            }
            t.insert("url".into(), url.into());
        }
        None => {
            t.insert("url".into(), "postgresql://127.0.0.1:5432/ycsb".into());
        }
    }
    if let Some((v, _)) = claim_value(props, "db.user") {
        t.insert("user".into(), v.into());
    }
    if let Some((v, _)) = claim_value(props, "db.passwd") {
        t.insert("password".into(), v.into());
    }
    // storlab's own: connections shared by the threads (YCSB's JDBC binding has one per thread).
    if let Some((v, p)) = claim_value(props, "db.poolsize") {
        let n: u32 = v.parse().ok().filter(|n| *n >= 1).ok_or(YcsbBindingError {
            property: p,
            reason: "expected a whole number from 1".into(),
        })?;
        t.insert("pool-size".into(), (n as i64).into());
    }
    Ok(t)
}

/// A SQL identifier storlab writes into statements: letters, digits and `_` only.
fn identifier(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

/// What a prepared postgres target's sessions share: the server's version, and what
/// `prepare` did with pgbench's tables.
pub struct PgShared {
    software: Vec<(String, String)>,
    pgbench_database: Option<String>,
}

/// YCSB's operations and pgbench's transactions.
const OPS: [OpKind; 8] = [
    OpKind::Read,
    OpKind::Update,
    OpKind::Insert,
    OpKind::Scan,
    OpKind::ReadModifyWrite,
    OpKind::TpcbLike,
    OpKind::SelectOnly,
    OpKind::SimpleUpdate,
];

impl Target for PostgresConfig {
    const TYPE: TargetType = TYPE;
    type Shared = PgShared;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[crate::model::WorkloadKind::Ycsb, crate::model::WorkloadKind::Pgbench],
            ops: &OPS,
            // One statement at a time per session.
            overlap: Overlap::None,
            in_process: false,
        }
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, PgShared), TargetError> {
        let software = self.server_version(opts)?;
        let pgbench_database = match opts.pgbench_scale {
            Some(scale) => {
                let mut client = self.connect().map_err(|e| {
                    TargetError::Invalid(format!("{}: connecting: {e}", self.describe()))
                })?;
                Some(pgbench::init(&mut client, scale).map_err(|e| {
                    TargetError::Invalid(format!(
                        "{}: initializing pgbench's tables: {e}",
                        self.describe()
                    ))
                })?)
            }
            None => None,
        };
        Ok((
            Region::default(),
            PgShared {
                software,
                pgbench_database,
            },
        ))
    }

    fn open<U: SessionUser>(
        &self,
        shared: &PgShared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        match &params.pgbench {
            Some(p) => {
                let database = shared
                    .pgbench_database
                    .clone()
                    .unwrap_or_else(|| "not prepared".into());
                let session = pgbench::PgbenchSession::open(self, p.clone(), database)?;
                Ok(user.run(session))
            }
            None => self.open_session(params, user),
        }
    }

    fn software(&self, shared: &PgShared) -> Vec<(String, String)> {
        shared.software.clone()
    }

    fn reads_records_back(&self) -> bool {
        true
    }

    fn keeps_ledger(&self) -> bool {
        true
    }

    fn check_ledger(
        &self,
        _shared: &PgShared,
        ledger: &crate::verify::ledger::Ledger,
    ) -> Result<crate::verify::kv::KvVerifyReport, TargetError> {
        pgbench::check_ledger(self, ledger)
    }
}

impl PostgresConfig {
    fn config(&self) -> Result<postgres::Config, postgres::Error> {
        let (url, tcp_user_timeout_ms) = libpq_tcp_user_timeout(&self.url);
        let mut c: postgres::Config = url.parse()?;
        if let Some(ms) = tcp_user_timeout_ms {
            c.tcp_user_timeout(std::time::Duration::from_millis(ms));
        }
        if let Some(u) = &self.user {
            c.user(u);
        }
        if let Some(p) = &self.password {
            c.password(p);
        }
        if c.get_connect_timeout().is_none() {
            c.connect_timeout(std::time::Duration::from_secs(10));
        }
        if c.get_application_name().is_none() {
            // How a DBA tells storlab's sessions apart in pg_stat_activity.
            c.application_name("storlab");
        }
        Ok(c)
    }

    fn connect(&self) -> Result<Client, postgres::Error> {
        self.config()?.connect(NoTls)
    }

    fn describe(&self) -> String {
        // Without credentials.
        match self.config() {
            Ok(c) => format!(
                "postgres {:?}:{:?}/{}",
                c.get_hosts(),
                c.get_ports(),
                c.get_dbname().unwrap_or("")
            ),
            Err(_) => "postgres".into(),
        }
    }

    /// Checks the server answers, creates the table if missing, asks the version.
    fn server_version(&self, opts: &PrepareOptions) -> Result<Vec<(String, String)>, TargetError> {
        let fail = |what: &str, e: postgres::Error| {
            TargetError::Invalid(format!("{}: {what}: {e}", self.describe()))
        };
        let mut client = self.connect().map_err(|e| fail("connecting", e))?;
        if let Some(w) = &opts.ycsb {
            check_names(w)?;
            let mut sql = format!(
                "CREATE TABLE IF NOT EXISTS {} (YCSB_KEY VARCHAR(255) PRIMARY KEY",
                w.table
            );
            for i in 0..w.field_count {
                sql.push_str(&format!(", {}{i} TEXT", w.field_name_prefix));
            }
            sql.push(')');
            client
                .batch_execute(&sql)
                .map_err(|e| fail("creating the table", e))?;
        }
        let row = client
            .query_one("SHOW server_version", &[])
            .map_err(|e| fail("asking the version", e))?;
        let version: String = row.get(0);
        Ok(vec![("postgresql".into(), version)])
    }

    fn open_session<U: SessionUser>(
        &self,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let Some(w) = params.ycsb.as_deref() else {
            return Err(TargetError::Invalid(
                "a postgres target runs ycsb workloads only".into(),
            ));
        };
        check_names(w)?;
        let mut session = PgSession {
            config: self.clone(),
            conn: None,
            sql: Sql::new(w),
            record: RecordBuf::new(w, params.seed ^ ((params.worker as u64 + 1) << 32))
                .with_verify(params.kv_verify.as_ref(), params.queue_depth),
        };
        session.take_pooled();
        let connected = session.connect().is_ok();
        session.give_pooled();
        if !connected {
            return Err(TargetError::Invalid(format!(
                "{}: cannot connect",
                self.describe()
            )));
        }
        Ok(user.run(session))
    }
}

fn check_names(w: &CoreWorkload) -> Result<(), TargetError> {
    if !identifier(&w.table) || !identifier(&w.field_name_prefix) {
        return Err(TargetError::Invalid(format!(
            "table `{}` and fieldnameprefix `{}` must be SQL identifiers (letters, digits, _)",
            w.table, w.field_name_prefix
        )));
    }
    Ok(())
}

/// The statements' text, built once per session.
struct Sql {
    read_all: String,
    read_field: Vec<String>,
    update_all: String,
    update_field: Vec<String>,
    insert: String,
    scan_all: String,
    scan_field: Vec<String>,
}

impl Sql {
    fn new(w: &CoreWorkload) -> Sql {
        let t = &w.table;
        let f = |i: u32| format!("{}{i}", w.field_name_prefix);
        let n = w.field_count;
        Sql {
            read_all: format!("SELECT * FROM {t} WHERE YCSB_KEY = $1"),
            read_field: (0..n)
                .map(|i| format!("SELECT {} FROM {t} WHERE YCSB_KEY = $1", f(i)))
                .collect(),
            update_all: format!(
                "UPDATE {t} SET {} WHERE YCSB_KEY = ${}",
                (0..n)
                    .map(|i| format!("{} = ${}", f(i), i + 1))
                    .collect::<Vec<_>>()
                    .join(", "),
                n + 1
            ),
            update_field: (0..n)
                .map(|i| format!("UPDATE {t} SET {} = $1 WHERE YCSB_KEY = $2", f(i)))
                .collect(),
            insert: format!(
                "INSERT INTO {t} (YCSB_KEY, {}) VALUES ({})",
                (0..n).map(f).collect::<Vec<_>>().join(", "),
                (1..=n + 1)
                    .map(|i| format!("${i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            scan_all: format!(
                "SELECT * FROM {t} WHERE YCSB_KEY >= $1 ORDER BY YCSB_KEY LIMIT $2"
            ),
            scan_field: (0..n)
                .map(|i| {
                    format!(
                        "SELECT YCSB_KEY, {} FROM {t} WHERE YCSB_KEY >= $1 ORDER BY YCSB_KEY LIMIT $2",
                        f(i)
                    )
                })
                .collect(),
        }
    }
}

/// A live connection and its prepared statements.
struct Conn {
    client: Client,
    read_all: Statement,
    read_field: Vec<Statement>,
    update_all: Statement,
    update_field: Vec<Statement>,
    insert: Statement,
    scan_all: Statement,
    scan_field: Vec<Statement>,
}

/// One worker's connection.
pub struct PgSession {
    config: PostgresConfig,
    /// None after the connection failed: the next operation reconnects.
    conn: Option<Conn>,
    sql: Sql,
    record: RecordBuf,
}

const INTEGRITY: OpError = OpError {
    kind: ErrorKind::Integrity,
    code: 0,
};

/// Takes libpq's `tcp_user_timeout` (milliseconds) out of a URL or key-value connection string:
/// the `postgres` crate reads that key as seconds, so a libpq URL given to both would mean a
/// thousand times more here. 0 (libpq: the system default) gives None.
fn libpq_tcp_user_timeout(url: &str) -> (String, Option<u64>) {
    const KEY: &str = "tcp_user_timeout=";
    let mut ms = None;
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((head, query)) = url.split_once('?') else {
            return (url.to_string(), None);
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|kv| match kv.strip_prefix(KEY).map(str::parse::<u64>) {
                Some(Ok(v)) => {
                    ms = Some(v).filter(|v| *v > 0);
                    false
                }
                _ => true,
            })
            .collect();
        let url = if kept.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", kept.join("&"))
        };
        return (url, ms);
    }
    let kept: Vec<&str> = url
        .split_whitespace()
        .filter(|kv| match kv.strip_prefix(KEY).map(str::parse::<u64>) {
            Some(Ok(v)) => {
                ms = Some(v).filter(|v| *v > 0);
                false
            }
            _ => true,
        })
        .collect();
    if ms.is_none() && !url.split_whitespace().any(|kv| kv.starts_with(KEY)) {
        return (url.to_string(), None);
    }
    (kept.join(" "), ms)
}

fn error_of(e: &postgres::Error) -> OpError {
    let kind = if e.is_closed() {
        ErrorKind::Connection
    } else if e.as_db_error().is_some() {
        ErrorKind::Other
    } else {
        // Errors without a server message: I/O on the socket.
        ErrorKind::Connection
    };
    OpError { kind, code: 0 }
}

/// Checks a row's fields against the record buffer's current key: (bytes, all good).
fn check_row(rec: &RecordBuf, row: &postgres::Row, field: Option<u32>) -> (u32, bool) {
    let mut bytes = 0u32;
    let mut seen = 0usize;
    let mut good = true;
    for (c, col) in row.columns().iter().enumerate() {
        let name = col.name();
        if name.eq_ignore_ascii_case("ycsb_key") {
            continue;
        }
        let value: Option<&str> = row.try_get(c).unwrap_or(None);
        let Some(value) = value else {
            good = false;
            continue;
        };
        bytes += value.len() as u32;
        // Columns come back lower-case; field names are the workload's.
        let index = rec
            .names()
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name.as_bytes()));
        match index {
            Some(i) if field.is_none_or(|f| f as usize == i) => {
                seen += 1;
                good &= rec.verify(i, value.as_bytes());
            }
            _ => good = false,
        }
    }
    let want = field.map_or(rec.field_count(), |_| 1);
    (
        bytes,
        good && (seen == want || !rec.verifying() && seen > 0),
    )
}

impl PgSession {
    /// With a pool: takes a connection from it (or leave to open one) for the next operation.
    #[inline]
    fn take_pooled(&mut self) {
        if let Some(size) = self.config.pool_size {
            self.conn = self.config.pool.take(size);
        }
    }

    /// With a pool: gives the operation's connection back (or its place, if it failed).
    #[inline]
    fn give_pooled(&mut self) {
        if self.config.pool_size.is_some() {
            self.config.pool.give(self.conn.take());
        }
    }

    fn connect(&mut self) -> Result<&mut Conn, OpError> {
        if self.conn.is_none() {
            let mut client = self.config.connect().map_err(|e| error_of(&e))?;
            let mut p = |sql: &str| client.prepare(sql).map_err(|e| error_of(&e));
            let s = &self.sql;
            let conn = Conn {
                read_all: p(&s.read_all)?,
                read_field: s
                    .read_field
                    .iter()
                    .map(|q| p(q))
                    .collect::<Result<_, _>>()?,
                update_all: p(&s.update_all)?,
                update_field: s
                    .update_field
                    .iter()
                    .map(|q| p(q))
                    .collect::<Result<_, _>>()?,
                insert: p(&s.insert)?,
                scan_all: p(&s.scan_all)?,
                scan_field: s
                    .scan_field
                    .iter()
                    .map(|q| p(q))
                    .collect::<Result<_, _>>()?,
                client,
            };
            self.conn = Some(conn);
        }
        self.conn.as_mut().ok_or(OpError {
            kind: ErrorKind::Connection,
            code: 0,
        })
    }

    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let rec = &self.record;
        let conn = match self.conn.as_mut() {
            Some(c) => c,
            None => {
                return Err(OpError {
                    kind: ErrorKind::Connection,
                    code: 0,
                });
            }
        };
        let stmt = match field {
            Some(f) => &conn.read_field[f as usize],
            None => &conn.read_all,
        };
        let row = conn
            .client
            .query_opt(stmt, &[&rec.key_str()])
            .map_err(|e| error_of(&e))?;
        let Some(row) = row else {
            return Ok((0, false));
        };
        let (bytes, good) = check_row(rec, &row, field);
        if !good {
            return Err(INTEGRITY);
        }
        Ok((bytes + rec.key.len() as u32, true))
    }

    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        match field {
            Some(f) => self.record.fill(f as usize),
            None => self.record.fill_all(),
        }
        let rec = &self.record;
        let Some(conn) = self.conn.as_mut() else {
            return Err(OpError {
                kind: ErrorKind::Connection,
                code: 0,
            });
        };
        let n = match field {
            Some(f) => conn
                .client
                .execute(
                    &conn.update_field[f as usize],
                    &[&rec.value_str(f as usize), &rec.key_str()],
                )
                .map_err(|e| error_of(&e))?,
            None => {
                let fields = rec.field_count();
                let params = (0..fields + 1).map(|i| {
                    if i < fields {
                        rec.value_str(i)
                    } else {
                        rec.key_str()
                    }
                });
                let mut rows = conn
                    .client
                    .query_raw(&conn.update_all, params)
                    .map_err(|e| error_of(&e))?;
                while rows.next().map_err(|e| error_of(&e))?.is_some() {}
                rows.rows_affected().unwrap_or(0)
            }
        };
        let bytes = rec.key.len() as u32
            + field.map_or(rec.value_bytes(), |f| rec.values[f as usize].len() as u32);
        Ok((bytes, n > 0))
    }

    fn insert(&mut self) -> Result<u32, OpError> {
        self.record.fill_all();
        let rec = &self.record;
        let Some(conn) = self.conn.as_mut() else {
            return Err(OpError {
                kind: ErrorKind::Connection,
                code: 0,
            });
        };
        let params = (0..rec.field_count() + 1).map(|i| {
            if i == 0 {
                rec.key_str()
            } else {
                rec.value_str(i - 1)
            }
        });
        let mut rows = conn
            .client
            .query_raw(&conn.insert, params)
            .map_err(|e| error_of(&e))?;
        while rows.next().map_err(|e| error_of(&e))?.is_some() {}
        Ok(rec.key.len() as u32 + rec.value_bytes())
    }

    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(OpError {
                kind: ErrorKind::Connection,
                code: 0,
            });
        };
        let stmt = match field {
            Some(f) => &conn.scan_field[f as usize],
            None => &conn.scan_all,
        };
        let limit = count.min(i64::MAX as u64) as i64;
        let rows = conn
            .client
            .query(stmt, &[&self.record.key_str(), &limit])
            .map_err(|e| error_of(&e))?;
        let mut bytes = 0u32;
        let mut good = true;
        for row in &rows {
            let key: &str = row.try_get(0).unwrap_or("");
            self.record.key.clear();
            self.record.key.extend_from_slice(key.as_bytes());
            let (b, g) = check_row(&self.record, row, field);
            bytes = bytes.saturating_add(b + key.len() as u32);
            good &= g;
        }
        if !good {
            return Err(INTEGRITY);
        }
        Ok((bytes, !rows.is_empty()))
    }

    fn ycsb(&mut self, op: YcsbOp) -> Result<(u32, bool), OpError> {
        self.connect()?;
        self.run(op)
    }
}

impl YcsbStore for PgSession {
    fn record(&mut self) -> &mut RecordBuf {
        &mut self.record
    }
    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        PgSession::read(self, field)
    }
    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        PgSession::update(self, field)
    }
    fn insert(&mut self) -> Result<(u32, bool), OpError> {
        PgSession::insert(self).map(|n| (n, true))
    }
    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        PgSession::scan(self, count, field)
    }
}

impl Session for PgSession {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let y = ycsb_op(op)?;
        self.take_pooled();
        let outcome = self.ycsb(y);
        if let Err(e) = outcome {
            if e.kind == ErrorKind::Connection
                || self.conn.as_ref().is_some_and(|c| c.client.is_closed())
            {
                self.conn = None;
            }
        }
        self.give_pooled();
        Ok(Submitted::done(outcome))
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<crate::verify::kv::ReadBack> {
        self.take_pooled();
        let rb = match self.connect() {
            Ok(_) => crate::targets::read_back(self, keynum),
            Err(e) => crate::verify::kv::ReadBack {
                result: Err(e),
                observation: Default::default(),
            },
        };
        if rb.result.is_err() && self.conn.as_ref().is_some_and(|c| c.client.is_closed()) {
            self.conn = None;
        }
        self.give_pooled();
        Some(rb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_user_timeout_is_libpqs_milliseconds_and_connect_timeout_the_urls() {
        let c = |url: &str| {
            PostgresConfig {
                url: url.into(),
                user: None,
                password: None,
                pool_size: None,
                pool: Default::default(),
            }
            .config()
            .unwrap()
        };
        let multi = c(
            "postgresql://u:p@10.0.0.1:5432,10.0.0.2:5432/db?target_session_attrs=read-write&connect_timeout=2&tcp_user_timeout=3000&keepalives_idle=2",
        );
        assert_eq!(multi.get_hosts().len(), 2);
        assert_eq!(
            multi.get_tcp_user_timeout(),
            Some(&std::time::Duration::from_millis(3000))
        );
        assert_eq!(
            multi.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(2))
        );
        assert_eq!(
            multi.get_target_session_attrs(),
            postgres::config::TargetSessionAttrs::ReadWrite
        );
        let plain = c("postgresql://u@h/db");
        assert_eq!(plain.get_tcp_user_timeout(), None);
        assert_eq!(
            plain.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(10))
        );
        let kv = c("host=h dbname=db tcp_user_timeout=1500");
        assert_eq!(
            kv.get_tcp_user_timeout(),
            Some(&std::time::Duration::from_millis(1500))
        );
        assert_eq!(
            libpq_tcp_user_timeout("postgresql://h/db?tcp_user_timeout=5").0,
            "postgresql://h/db"
        );
    }

    #[test]
    fn statements_follow_ycsb_schema() {
        let mut p = Properties::new();
        p.set_override("recordcount=10").unwrap();
        p.set_override("fieldcount=2").unwrap();
        let w = CoreWorkload::from_properties(&mut p).unwrap();
        let s = Sql::new(&w);
        assert_eq!(
            s.insert,
            "INSERT INTO usertable (YCSB_KEY, field0, field1) VALUES ($1, $2, $3)"
        );
        assert_eq!(
            s.update_all,
            "UPDATE usertable SET field0 = $1, field1 = $2 WHERE YCSB_KEY = $3"
        );
        assert_eq!(
            crate::targets::redact_url("postgres://u:secret@h:5/db?x=1"),
            "postgres://u:<redacted>@h:5/db?x=1"
        );
        assert_eq!(
            crate::targets::redact_url("mongodb://h:1/db"),
            "mongodb://h:1/db"
        );
        assert!(identifier("usertable") && !identifier("user table") && !identifier("1t"));
    }
}
