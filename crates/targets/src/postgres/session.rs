//! A postgres session: one worker's connection, its prepared statements, and YCSB's
//! operations on them (the binding's SQL), with the connection pool shared by a target's
//! sessions.

use super::*;

/// The statements' text, built once per session.
pub(super) struct Sql {
    read_all: String,
    read_field: Vec<String>,
    update_all: String,
    update_field: Vec<String>,
    insert: String,
    scan_all: String,
    scan_field: Vec<String>,
}

impl Sql {
    pub(super) fn new(w: &CoreWorkload) -> Sql {
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
pub(super) struct Conn {
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
    pub(super) config: PostgresConfig,
    /// None after the connection failed: the next operation reconnects.
    pub(super) conn: Option<Conn>,
    pub(super) sql: Sql,
    pub(super) record: RecordBuf,
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
    pub(super) fn take_pooled(&mut self) {
        if let Some(size) = self.config.pool_size {
            self.conn = self.config.pool.take(size);
        }
    }

    /// With a pool: gives the operation's connection back (or its place, if it failed).
    #[inline]
    pub(super) fn give_pooled(&mut self) {
        if self.config.pool_size.is_some() {
            self.config.pool.give(self.conn.take());
        }
    }

    pub(super) fn connect(&mut self) -> Result<&mut Conn, OpError> {
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
            return Err(OpError::INTEGRITY);
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
            return Err(OpError::INTEGRITY);
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
        if let Err(e) = outcome
            && (e.kind == ErrorKind::Connection
                || self.conn.as_ref().is_some_and(|c| c.client.is_closed()))
            {
                self.conn = None;
            }
        self.give_pooled();
        Ok(Submitted::done(outcome))
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        self.take_pooled();
        let rb = match self.connect() {
            Ok(_) => crate::read_back(self, keynum),
            Err(e) => storlab_verify::kv::ReadBack {
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
    }
}
