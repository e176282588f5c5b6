//! pgbench's database and transactions on the `postgres` target.
//!
//! `prepare` readies pgbench's four tables at the workload's scale as `pgbench -i -s SCALE`
//! leaves them (its table definitions, fillfactor 100, its rows generated on the server as
//! `pgbench -i -I dtGvp` does, VACUUM ANALYZE, the primary keys). A database that already
//! holds pgbench's tables at that scale (storlab's or `pgbench -i`'s: the four tables, their
//! primary keys, `scale` branches, `10 * scale` tellers, accounts 1 to `100000 * scale`) is
//! reused as it is, like IOmeter's test file; each session says which in `used()`.
//!
//! Each session prepares the script's statements once per connection and runs a transaction
//! as pgbench's `-M prepared` does: one round trip per statement (BEGIN, the statements, END;
//! select-only is the SELECT alone), on storlab's own blocking client (`super::wire`: one
//! write and usually one read per statement, buffers allocated once per connection). Its own
//! state is fixed-size: the history row's ledger tag is written into a 22-byte buffer.
//! `tests/alloc.rs` measures the allocations per transaction. The tables (`prepare`) and the
//! ledger check use the `postgres` crate.
//!
//! A failed statement ends the transaction: ROLLBACK when the connection still stands, else
//! the connection is dropped and the next transaction reconnects (counted in `used()`). A
//! serialization failure or deadlock (SQLSTATE 40001, 40P01) is a `serialization` error, a
//! lost connection (or a reply later than the read timeout, see `super::wire`) a
//! `connection` error: errors of the system under test, counted, never a
//! crash. With the ledger, every transaction's history row carries its tag in `filler`.

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

use super::PostgresConfig;
use super::wire::{Param, Prepare, WireConn, WireError};
use storlab_model::{ErrorKind, OpError};
use crate::{Completions, PgbenchParams, Session, Submitted, TargetError};
use storlab_model::Op;
use storlab_verify::kv::KvVerifyReport;
use storlab_verify::ledger::{Ledger, TAG_BYTES};
use storlab_model::{PgbenchOp, Script};
use storlab_workload::{pgbench::ACCOUNTS_PER_SCALE, pgbench::TELLERS_PER_SCALE};

/// pgbench's tables, as `pgbench -i` creates them.
const CREATE: &str = "\
DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers;
CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
CREATE TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_accounts (aid int not null, bid int, abalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)) WITH (fillfactor = 100);";

const PRIMARY_KEYS: &str = "\
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);";

/// The scale of the pgbench tables in the connected database, if all four and their primary
/// keys are there with consistent row counts.
fn existing_scale(client: &mut Client) -> Result<Option<i64>, postgres::Error> {
    let present: i64 = client
        .query_one(
            "SELECT count(*) FROM unnest(ARRAY['pgbench_accounts', 'pgbench_branches', \
             'pgbench_history', 'pgbench_tellers', 'pgbench_accounts_pkey', \
             'pgbench_branches_pkey', 'pgbench_tellers_pkey']) AS t(name) \
             WHERE to_regclass(name) IS NOT NULL",
            &[],
        )?
        .get(0);
    if present != 7 {
        return Ok(None);
    }
    let row = client.query_one(
        "SELECT (SELECT count(*) FROM pgbench_branches), (SELECT count(*) FROM pgbench_tellers), \
         (SELECT min(aid)::bigint FROM pgbench_accounts), (SELECT max(aid)::bigint FROM pgbench_accounts)",
        &[],
    )?;
    let (branches, tellers): (i64, i64) = (row.get(0), row.get(1));
    let (min, max): (Option<i64>, Option<i64>) = (row.get(2), row.get(3));
    let consistent = branches > 0
        && tellers == TELLERS_PER_SCALE * branches
        && min == Some(1)
        && max == Some(ACCOUNTS_PER_SCALE * branches);
    Ok(consistent.then_some(branches))
}

/// Readies pgbench's tables at `scale`: reused when present at that scale, else created as
/// `pgbench -i -s SCALE` does. Returns what was done, for the sessions' `used()`.
pub fn init(client: &mut Client, scale: u32) -> Result<String, postgres::Error> {
    let s = scale as i64;
    let before = existing_scale(client)?;
    if before == Some(s) {
        return Ok(format!(
            "reused: pgbench tables of scale {s} were there ({s} branches, {} tellers, {} accounts)",
            TELLERS_PER_SCALE * s,
            ACCOUNTS_PER_SCALE * s
        ));
    }
    client.batch_execute(CREATE)?;
    // Whole numbers only: written into the statements.
    client.batch_execute(&format!(
        "BEGIN;
INSERT INTO pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, {s}) AS bid;
INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, {}) AS tid;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series(1, {}) AS aid;
COMMIT;",
        TELLERS_PER_SCALE * s,
        ACCOUNTS_PER_SCALE * s
    ))?;
    client.batch_execute("VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history")?;
    client.batch_execute(PRIMARY_KEYS)?;
    Ok(format!(
        "created: pgbench tables of scale {s} ({s} branches, {} tellers, {} accounts), as pgbench -i -s {s}{}",
        TELLERS_PER_SCALE * s,
        ACCOUNTS_PER_SCALE * s,
        match before {
            Some(o) => format!(", replacing tables of scale {o}"),
            None => String::new(),
        }
    ))
}

/// The script's statements, prepared once per connection under these names.
const BEGIN: &str = "begin";
const END: &str = "end";
const ROLLBACK: &str = "rollback";
const UPDATE_ACCOUNT: &str = "update_account";
const SELECT_BALANCE: &str = "select_balance";
const UPDATE_TELLER: &str = "update_teller";
const UPDATE_BRANCH: &str = "update_branch";
const INSERT_HISTORY: &str = "insert_history";

/// int4's type OID: the integer parameters are sent as 4-byte binary values.
const INT4: u32 = 23;

/// The statements to prepare: the history row's filler (the ledger's tag) only with a ledger.
fn statements(with_filler: bool) -> [Prepare<'static>; 8] {
    let p = |name, sql, types| Prepare { name, sql, types };
    [
        p(BEGIN, "BEGIN", &[]),
        p(END, "END", &[]),
        p(ROLLBACK, "ROLLBACK", &[]),
        p(
            UPDATE_ACCOUNT,
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            &[INT4, INT4],
        ),
        p(
            SELECT_BALANCE,
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            &[INT4],
        ),
        p(
            UPDATE_TELLER,
            "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
            &[INT4, INT4],
        ),
        p(
            UPDATE_BRANCH,
            "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
            &[INT4, INT4],
        ),
        if with_filler {
            p(
                INSERT_HISTORY,
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime, filler) \
                 VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, $5)",
                // The filler's type (char(22)) as the server infers it.
                &[INT4, INT4, INT4, INT4, 0],
            )
        } else {
            p(
                INSERT_HISTORY,
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
                 VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                &[INT4, INT4, INT4, INT4],
            )
        },
    ]
}

/// One client of a pgbench workload.
pub struct PgbenchSession {
    config: postgres::Config,
    describe: String,
    conn: Option<WireConn>,
    params: PgbenchParams,
    /// What `prepare` did with the database.
    database: String,
    /// The worker's last transaction number (ledger).
    txn: u64,
    tag: [u8; TAG_BYTES],
    connects: u64,
}

fn error_of(e: &WireError) -> OpError {
    OpError {
        kind: e.kind(),
        code: 0,
    }
}

impl PgbenchSession {
    pub fn open(
        config: &PostgresConfig,
        params: PgbenchParams,
        database: String,
    ) -> Result<PgbenchSession, TargetError> {
        let describe = config.describe();
        let pg = config
            .config()
            .map_err(|e| TargetError::Invalid(format!("{describe}: {e}")))?;
        let mut s = PgbenchSession {
            config: pg,
            describe,
            conn: None,
            params,
            database,
            txn: 0,
            tag: [b' '; TAG_BYTES],
            connects: 0,
        };
        s.connect().map_err(|e| {
            TargetError::Invalid(format!("{}: cannot connect ({e})", s.describe))
        })?;
        Ok(s)
    }

    fn connect(&mut self) -> Result<(), WireError> {
        if self.conn.is_some() {
            return Ok(());
        }
        self.connects += 1;
        let conn = WireConn::connect(&self.config, &statements(self.params.ledger.is_some()))?;
        self.conn = Some(conn);
        Ok(())
    }

    /// The transaction's statements, one round trip each.
    fn transaction(&mut self, op: &PgbenchOp) -> Result<(), WireError> {
        let Some(c) = self.conn.as_mut() else {
            unreachable!("connected before");
        };
        let select = |c: &mut WireConn| {
            c.execute(SELECT_BALANCE, &[Param::Int4(op.aid)])
                .map(|r| r.first_int4)
        };
        if op.script == Script::SelectOnly {
            select(c)?;
            return Ok(());
        }
        let (delta, aid, tid, bid) = (
            Param::Int4(op.delta),
            Param::Int4(op.aid),
            Param::Int4(op.tid),
            Param::Int4(op.bid),
        );
        c.execute(BEGIN, &[])?;
        c.execute(UPDATE_ACCOUNT, &[delta, aid])?;
        select(c)?;
        if op.script == Script::TpcbLike {
            c.execute(UPDATE_TELLER, &[delta, tid])?;
            c.execute(UPDATE_BRANCH, &[delta, bid])?;
        }
        match &self.params.ledger {
            Some(l) => {
                l.write_tag(self.params.client, self.txn, &mut self.tag);
                c.execute(INSERT_HISTORY, &[tid, bid, aid, delta, Param::Text(&self.tag)])?
            }
            None => c.execute(INSERT_HISTORY, &[tid, bid, aid, delta])?,
        };
        c.execute(END, &[])?;
        Ok(())
    }
}

impl Session for PgbenchSession {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let Op::Pgbench(p) = op else {
            return Err(OpError {
                kind: ErrorKind::Invalid,
                code: libc::EINVAL,
            });
        };
        let writes = p.script.writes();
        if writes {
            self.txn += 1;
        }
        let outcome = match self.connect() {
            Ok(()) => self.transaction(&p).map_err(|e| {
                match self.conn.as_mut() {
                    // In a transaction (failed or not): end it.
                    Some(c) if e.connection_stands() => {
                        if c.status != b'I' && c.execute(ROLLBACK, &[]).is_err() {
                            self.conn = None;
                        }
                    }
                    _ => self.conn = None,
                }
                error_of(&e)
            }),
            Err(e) => Err(error_of(&e)),
        };
        if writes && let Some(l) = &self.params.ledger {
            l.record(self.params.client, self.txn, outcome.is_ok());
        }
        Ok(Submitted::Done {
            result: outcome.map(|()| 0),
            found: true,
        })
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![
            ("pgbench.database", self.database.clone()),
            (
                "pgbench.statements",
                "prepared once per connection; one round trip per statement, BEGIN to END (pgbench -M prepared), on storlab's blocking client".into(),
            ),
            ("pgbench.connections-opened", self.connects.to_string()),
            (
                "pgbench.read-timeout",
                format!(
                    "{} ms ({}): a later reply is a connection error and a reconnect",
                    super::wire::read_timeout(&self.config).as_millis(),
                    if self.config.get_tcp_user_timeout().is_some_and(|t| !t.is_zero()) {
                        "the URL's tcp_user_timeout"
                    } else {
                        "default: the URL has no tcp_user_timeout"
                    }
                ),
            ),
            (
                "pgbench.ledger",
                match &self.params.ledger {
                    Some(l) => format!("history rows tagged {}…", l.run_tag()),
                    None => "off".into(),
                },
            ),
        ]
    }
}

/// Reads back every history row with the ledger's run tag and checks the ledger.
pub fn check_ledger(
    config: &PostgresConfig,
    ledger: &Ledger,
) -> Result<KvVerifyReport, TargetError> {
    let fail = |e: postgres::Error| {
        TargetError::Invalid(format!("{}: reading pgbench_history: {e}", config.describe()))
    };
    let mut client = config.connect().map_err(fail)?;
    let pattern = format!("{}%", ledger.run_tag());
    let rows = client
        .query_raw(
            "SELECT filler::text FROM pgbench_history WHERE filler LIKE $1",
            [&pattern as &dyn ToSql],
        )
        .map_err(fail)?;
    ledger
        .check(
            rows.iterator()
                .map(|r| r.and_then(|row| row.try_get::<_, Option<String>>(0))),
        )
        .map_err(fail)
}
