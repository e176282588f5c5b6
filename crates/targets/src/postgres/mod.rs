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
//! statements on storlab's own blocking client (`wire`): see
//! [`pgbench`].

pub mod pgbench;
mod session;
mod wire;

use session::{Conn, Sql};
pub use session::PgSession;

use std::sync::{Arc, Condvar, Mutex};

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls, Statement};
use serde::{Deserialize, Serialize};

use storlab_model::{ErrorKind, OpError};
use storlab_model::OpKind;
use crate::{Capabilities, Completions, LedgerKeeper, OptionError, Overlap, PrepareOptions, Region, Session, SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType, YcsbBinding, YcsbBindingError, YcsbStore, claim_value, option_error, ycsb_op};
use storlab_model::Op;
use storlab_model::YcsbOp;
use storlab_workload::{ycsb::CoreWorkload, ycsb::Properties, ycsb::RecordBuf};

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
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &["jdbc", "postgresql"],
        classes: &["site.ycsb.db.JdbcDBClient"],
        batch: None,
        options: ycsb_options,
    }),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PostgresConfig {
    #[serde(serialize_with = "crate::serialize_redacted_url")]
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
    if let Some((v, p)) = claim_value(props, "db.driver")
        && v != "org.postgresql.Driver" {
            return Err(YcsbBindingError {
                property: p,
                reason: "storlab's JDBC binding speaks to PostgreSQL only (org.postgresql.Driver)"
                    .into(),
            });
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
            workloads: &[storlab_model::WorkloadKind::Ycsb, storlab_model::WorkloadKind::Pgbench],
            ops: &OPS,
            // One statement at a time per session.
            overlap: Overlap::None,
            in_process: false,
            writes_given_buffers: false,
            reads_records_back: true,
            keeps_ledger: true,
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
        match params.pgbench() {
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

    fn ledger(&self) -> Option<&dyn LedgerKeeper<PgShared>> {
        Some(self)
    }
}

/// pgbench's ledger: the history rows of a run read back (see [`pgbench::check_ledger`]).
impl LedgerKeeper<PgShared> for PostgresConfig {
    fn check_ledger(
        &self,
        _shared: &PgShared,
        ledger: &storlab_verify::ledger::Ledger,
    ) -> Result<storlab_verify::kv::KvVerifyReport, TargetError> {
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
        let Some(w) = params.ycsb() else {
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
                .with_verify(params.kv_verify(), params.queue_depth),
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
    fn urls_are_redacted_and_tables_are_identifiers() {
        assert_eq!(
            crate::redact_url("postgres://u:secret@h:5/db?x=1"),
            "postgres://u:***@h:5/db?x=1"
        );
        assert_eq!(
            crate::redact_url("mongodb://h:1/db"),
            "mongodb://h:1/db"
        );
        assert!(identifier("usertable") && !identifier("user table") && !identifier("1t"));
    }
}
