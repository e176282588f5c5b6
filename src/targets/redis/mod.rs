//! The `redis` target: a Redis server, through the `redis` crate's synchronous connection, one
//! connection per worker. Records are stored as YCSB's redis binding stores them: a hash per
//! record (`HMSET key field value ...`), and every key in the sorted set `_indices` scored by
//! the Java `hashCode` of the key, which scans walk (`ZRANGEBYSCORE _indices score +inf LIMIT 0
//! count`, then the records).
//!
//! storlab packs each command's RESP bytes into a buffer the session owns and hands them to
//! the crate (`req_packed_command`), so storlab itself formats and allocates nothing per
//! operation; the crate allocates the parsed reply. A read of a missing record is a miss
//! (YCSB's NOT_FOUND). A connection that fails mid-run counts the operation as a
//! `connection` (or `timeout`) error and the next operation reconnects.
//!
//! Pipelining: with a queue depth above one (a study's `queue-depth`, or storlab's own
//! `-p redis.pipeline=N` on the YCSB command line), consecutive inserts (a load) go to the
//! server as one pipeline of their `HMSET` and `ZADD` commands, one round trip; each insert of
//! the pipeline is timed from its submission to the pipeline's last reply. Other operations
//! stay one at a time, as YCSB's binding sends them.
//!
//! Redis Cluster (`cluster = true`, [`cluster`]): each command goes to the master of its key's
//! slot, redirections and failovers are followed, and inserts are not pipelined: each is sent
//! and timed alone (the summary's `execution` says so when a queue depth was asked). `key-prefix` puts a text before every key (and
//! the index), so that several targets (tenants) share one server or cluster with keys of
//! their own.
//!
//! YCSB properties: `redis.host`, `redis.port`, `redis.password`, `redis.timeout` (ms), and
//! storlab's `redis.pipeline`.

pub mod cluster;

use std::time::Duration;

use redis::{ConnectionLike, Value};
use serde::{Deserialize, Serialize};

use crate::record::{OpKind, ErrorKind, OpError};
use crate::targets::{
    Completion, Completions, Op, OptionError, Overlap, PrepareOptions, Session, SessionParams,
    SessionUser, Submitted, TargetConfig, TargetError, TargetType, YcsbBindingError, YcsbStore,
    claim_value, option_error, ycsb_op,
};
use crate::units::Dur;
use crate::workload::ycsb::{Properties, RecordBuf, YcsbOp};

pub const TYPE: TargetType = TargetType {
    name: "redis",
    summary: "a Redis server: a hash per YCSB record, keys indexed in the sorted set _indices",
    options: &[
        ("host", "server address (default 127.0.0.1)"),
        ("port", "server port (default 6379)"),
        ("password", "AUTH password (default none)"),
        ("database", "database number (default 0)"),
        (
            "timeout",
            "connect, read and write timeout, e.g. \"2s\" (default 10s)",
        ),
        (
            "cluster",
            "true: a Redis Cluster; commands go to the master of their key's slot (default false)",
        ),
        (
            "seeds",
            "with cluster: nodes to read the slot map from, \"HOST:PORT,HOST:PORT\" (default host:port)",
        ),
        (
            "key-prefix",
            "text before every key and the index, e.g. \"tenant1:\" (default none)",
        ),
    ],
    parse,
    ycsb_names: &[],
    ycsb_options: Some(ycsb_options),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RedisConfig {
    #[serde(default = "default_host")]
    pub host: String,
    /// A number, or text (so that a study can write `port = "${VAR:-6379}"`).
    #[serde(default = "default_port", deserialize_with = "port_number")]
    pub port: u16,
    #[serde(default, skip_serializing)]
    pub password: Option<String>,
    #[serde(default)]
    pub database: u32,
    #[serde(default = "default_timeout")]
    pub timeout: Dur,
    #[serde(default)]
    pub cluster: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_prefix: String,
}

fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    6379
}

fn port_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Port {
        Number(i64),
        Text(String),
    }
    let shown = match Port::deserialize(d)? {
        Port::Number(n) => n.to_string(),
        Port::Text(t) => t,
    };
    shown
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            serde::de::Error::custom(format!("port `{shown}` is not a port number (1 to 65535)"))
        })
}
fn default_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: RedisConfig = table.try_into().map_err(option_error)?;
    if c.timeout.0.is_zero() {
        return Err(OptionError {
            key: "timeout".into(),
            message: "timeout must be above 0".into(),
        });
    }
    if let Some(s) = &c.seeds {
        if !c.cluster {
            return Err(OptionError {
                key: "seeds".into(),
                message: "`seeds` are the nodes of a Redis Cluster: set `cluster = true`".into(),
            });
        }
        cluster::parse_seeds(s).map_err(|message| OptionError {
            key: "seeds".into(),
            message,
        })?;
    }
    if c.cluster && c.database != 0 {
        return Err(OptionError {
            key: "database".into(),
            message: "a Redis Cluster has database 0 only".into(),
        });
    }
    Ok(TargetConfig::Redis(c))
}

/// YCSB's redis binding properties to this target's options.
fn ycsb_options(props: &mut Properties) -> Result<toml::Table, YcsbBindingError> {
    let mut t = toml::Table::new();
    if let Some((v, _)) = claim_value(props, "redis.host") {
        t.insert("host".into(), v.into());
    }
    if let Some((v, p)) = claim_value(props, "redis.port") {
        let port: u16 = v.parse().map_err(|_| YcsbBindingError {
            property: p,
            reason: "expected a port number".into(),
        })?;
        t.insert("port".into(), (port as i64).into());
    }
    if let Some((v, _)) = claim_value(props, "redis.password") {
        t.insert("password".into(), v.into());
    }
    if let Some((v, p)) = claim_value(props, "redis.timeout") {
        let ms: u64 = v.parse().map_err(|_| YcsbBindingError {
            property: p,
            reason: "expected milliseconds".into(),
        })?;
        t.insert("timeout".into(), format!("{}ms", ms.max(1)).into());
    }
    Ok(t)
}

/// The sorted set YCSB's redis binding keeps every key in, for scans.
const INDEX: &[u8] = b"_indices";

// Queued inserts go to the server together (a pipeline, an insertMany); other operations
// run one at a time.
crate::targets::ycsb_store::server_target!(
    RedisConfig,
    Overlap::Batched {
        kinds: &[OpKind::Insert],
        max_queue_depth: 1024,
    }
);

impl RedisConfig {
    fn connect(&self) -> redis::RedisResult<redis::Connection> {
        let mut settings = redis::RedisConnectionInfo::default().set_db(self.database as i64);
        if let Some(p) = &self.password {
            settings = settings.set_password(p);
        }
        let info = redis::IntoConnectionInfo::into_connection_info(redis::ConnectionAddr::Tcp(
            self.host.clone(),
            self.port,
        ))?
        .set_redis_settings(settings);
        let client = redis::Client::open(info)?;
        let conn = client.get_connection_with_timeout(self.timeout.0)?;
        conn.set_read_timeout(Some(self.timeout.0))?;
        conn.set_write_timeout(Some(self.timeout.0))?;
        Ok(conn)
    }

    fn describe(&self) -> String {
        match (&self.seeds, self.cluster) {
            (Some(s), true) => format!("redis cluster {s}"),
            (None, true) => format!("redis cluster {}:{}", self.host, self.port),
            _ => format!("redis {}:{}/{}", self.host, self.port, self.database),
        }
    }

    /// This target's connection: one server's, or a cluster router (its slot map read).
    fn link(&self) -> Result<Link, String> {
        if !self.cluster {
            return self
                .connect()
                .map(|c| Link::Single(Some(c)))
                .map_err(|e| e.to_string());
        }
        let seeds = match &self.seeds {
            Some(s) => cluster::parse_seeds(s)?,
            None => vec![(self.host.clone(), self.port)],
        };
        let mut r = cluster::Router::new(seeds, self.password.clone(), self.timeout.0);
        r.refresh()
            .map_err(|e| format!("no seed answered CLUSTER SLOTS ({})", e.kind.name()))?;
        Ok(Link::Cluster(Box::new(r)))
    }

    /// Checks that the server answers and asks its version.
    fn server_version(&self, _opts: &PrepareOptions) -> Result<Vec<(String, String)>, TargetError> {
        let mut link = self
            .link()
            .map_err(|e| TargetError::Invalid(format!("{}: {e}", self.describe())))?;
        let conn = match &mut link {
            Link::Single(c) => c.as_mut().ok_or_else(|| {
                TargetError::Invalid(format!("{}: not connected", self.describe()))
            })?,
            Link::Cluster(r) => r.any().map_err(|e| {
                TargetError::Invalid(format!("{}: no master answers ({})", self.describe(), e.kind.name()))
            })?,
        };
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(conn)
            .map_err(|e| TargetError::Invalid(format!("{}: INFO: {e}", self.describe())))?;
        let version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_string());
        Ok(version
            .map(|v| ("redis".to_string(), v))
            .into_iter()
            .collect())
    }

    fn open_session<U: SessionUser>(
        &self,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let Some(w) = params.ycsb.as_deref() else {
            return Err(TargetError::Invalid(
                "a redis target runs ycsb workloads only".into(),
            ));
        };
        let link = self
            .link()
            .map_err(|e| TargetError::Invalid(format!("{}: {e}", self.describe())))?;
        let session = RedisSession {
            config: self.clone(),
            link,
            record: RecordBuf::new(w, params.seed ^ ((params.worker as u64 + 1) << 32))
                .with_verify(params.kv_verify.as_ref(), params.queue_depth),
            cmd: Vec::with_capacity(4096),
            // A cluster sends a pipeline's commands one after the other (each to its own
            // master), so queued inserts would each be timed to the last one's reply: in a
            // cluster every insert goes alone, timed on its own.
            pipeline: params.queue_depth > 1 && !self.cluster,
            queue_depth: params.queue_depth,
            queue: Vec::with_capacity(params.queue_depth as usize),
            sizes: Vec::with_capacity(params.queue_depth as usize),
        };
        Ok(user.run(session))
    }
}

/// One worker's connection.
pub struct RedisSession {
    config: RedisConfig,
    link: Link,
    record: RecordBuf,
    /// The packed command.
    cmd: Vec<u8>,
    /// Inserts are pipelined (queue depth above 1, one server).
    pipeline: bool,
    /// The queue depth asked, to say what was used instead in a cluster.
    queue_depth: u32,
    /// Inserts submitted and not yet sent (pipelining only).
    queue: Vec<(u32, YcsbOp)>,
    /// Bytes of each insert of a pipeline.
    sizes: Vec<u32>,
}

/// A session's way to the data.
enum Link {
    /// One server's connection; None after it failed: the next operation reconnects.
    Single(Option<redis::Connection>),
    /// A cluster: a connection per master, commands routed by slot.
    Cluster(Box<cluster::Router>),
}

fn error_of(e: &redis::RedisError) -> OpError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        ErrorKind::Connection
    } else {
        ErrorKind::Other
    };
    OpError { kind, code: 0 }
}

const INTEGRITY: OpError = OpError {
    kind: ErrorKind::Integrity,
    code: 0,
};
const PROTOCOL: OpError = OpError {
    kind: ErrorKind::Other,
    code: 0,
};

/// Appends a RESP array header.
#[inline]
fn header(buf: &mut Vec<u8>, args: usize) {
    buf.push(b'*');
    decimal(buf, args as u64);
    buf.extend_from_slice(b"\r\n");
}

/// Appends one RESP bulk string argument: `prefix` then `bytes` (a key with the target's
/// `key-prefix`).
#[inline]
fn key_arg(buf: &mut Vec<u8>, prefix: &str, bytes: &[u8]) {
    buf.push(b'$');
    decimal(buf, (prefix.len() + bytes.len()) as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(prefix.as_bytes());
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

/// Appends one RESP bulk string argument.
#[inline]
fn arg(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.push(b'$');
    decimal(buf, bytes.len() as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

#[inline]
fn decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Writes `n` in decimal into `out` and returns the text.
#[inline]
fn number(n: i64, out: &mut [u8; 21]) -> &[u8] {
    let mut m = n.unsigned_abs();
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        out[i] = b'-';
    }
    &out[i..]
}

/// Java's `String.hashCode()` of an ASCII key: YCSB's score in `_indices`.
#[inline]
fn java_hash(key: &[u8]) -> i32 {
    key.iter()
        .fold(0i32, |h, &b| h.wrapping_mul(31).wrapping_add(b as i32))
}

fn bulk(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

impl RedisSession {
    fn conn(&mut self) -> Result<&mut redis::Connection, OpError> {
        let Link::Single(conn) = &mut self.link else {
            return Err(PROTOCOL);
        };
        if conn.is_none() {
            *conn = Some(self.config.connect().map_err(|e| error_of(&e))?);
        }
        conn.as_mut().ok_or(OpError {
            kind: ErrorKind::Connection,
            code: 0,
        })
    }

    /// Sends the packed command(s) and returns the replies; a failed connection is dropped.
    fn send(&mut self, count: usize) -> Result<Vec<Value>, OpError> {
        if let Link::Cluster(r) = &mut self.link {
            return r.request_all(&self.cmd, count);
        }
        let cmd = std::mem::take(&mut self.cmd);
        let result = match self.conn() {
            Ok(c) => {
                if count == 1 {
                    c.req_packed_command(&cmd).map(|v| vec![v])
                } else {
                    c.req_packed_commands(&cmd, 0, count)
                }
            }
            Err(e) => {
                self.cmd = cmd;
                return Err(e);
            }
        };
        self.cmd = cmd;
        result.map_err(|e| {
            let err = error_of(&e);
            if let Link::Single(conn) = &mut self.link
                && (err.kind != ErrorKind::Other || !conn.as_ref().is_some_and(|c| c.is_open()))
            {
                *conn = None;
            }
            err
        })
    }

    /// Packs `HMSET key field value ...` for one field or all.
    fn pack_hmset(&mut self, field: Option<u32>) {
        let r = &self.record;
        let n = field.map_or(r.field_count(), |_| 1);
        header(&mut self.cmd, 2 + 2 * n);
        arg(&mut self.cmd, b"HMSET");
        key_arg(&mut self.cmd, &self.config.key_prefix, &r.key);
        match field {
            Some(f) => {
                arg(&mut self.cmd, r.name(f as usize));
                arg(&mut self.cmd, &r.values[f as usize]);
            }
            None => {
                for i in 0..r.field_count() {
                    arg(&mut self.cmd, r.name(i));
                    arg(&mut self.cmd, &r.values[i]);
                }
            }
        }
    }

    /// Packs the read of the current key: HGETALL, or HMGET of one field.
    fn pack_read(&mut self, field: Option<u32>) {
        match field {
            None => {
                header(&mut self.cmd, 2);
                arg(&mut self.cmd, b"HGETALL");
                key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
            }
            Some(f) => {
                header(&mut self.cmd, 3);
                arg(&mut self.cmd, b"HMGET");
                key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
                arg(&mut self.cmd, self.record.name(f as usize));
            }
        }
    }

    /// Checks a read's reply for the current key: (bytes, found).
    fn check_read(&self, reply: &Value, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let r = &self.record;
        match (field, reply) {
            (None, Value::Array(items)) => {
                if items.is_empty() {
                    return Ok((0, false));
                }
                let mut bytes = 0u32;
                let mut seen = 0;
                for pair in items.chunks(2) {
                    let (Some(name), Some(value)) =
                        (pair.first().and_then(bulk), pair.get(1).and_then(bulk))
                    else {
                        return Err(PROTOCOL);
                    };
                    bytes += (name.len() + value.len()) as u32;
                    match r.field_index(name) {
                        Some(i) if r.verify(i, value) => seen += 1,
                        _ => return Err(INTEGRITY),
                    }
                }
                if r.verifying() && seen != r.field_count() {
                    return Err(INTEGRITY);
                }
                Ok((bytes, true))
            }
            (None, Value::Map(items)) => {
                if items.is_empty() {
                    return Ok((0, false));
                }
                let mut bytes = 0u32;
                for (n, v) in items {
                    let (Some(name), Some(value)) = (bulk(n), bulk(v)) else {
                        return Err(PROTOCOL);
                    };
                    bytes += (name.len() + value.len()) as u32;
                    match r.field_index(name) {
                        Some(i) if r.verify(i, value) => {}
                        _ => return Err(INTEGRITY),
                    }
                }
                if r.verifying() && items.len() != r.field_count() {
                    return Err(INTEGRITY);
                }
                Ok((bytes, true))
            }
            (Some(f), Value::Array(items)) => match items.first() {
                Some(Value::Nil) | None => Ok((0, false)),
                Some(v) => {
                    let value = bulk(v).ok_or(PROTOCOL)?;
                    if !r.verify(f as usize, value) {
                        return Err(INTEGRITY);
                    }
                    Ok((value.len() as u32, true))
                }
            },
            (_, Value::ServerError(_)) => Err(PROTOCOL),
            _ => Err(PROTOCOL),
        }
    }

    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        self.cmd.clear();
        self.pack_read(field);
        let replies = self.send(1)?;
        self.check_read(&replies[0], field)
    }

    fn update(&mut self, field: Option<u32>) -> Result<u32, OpError> {
        match field {
            Some(f) => self.record.fill(f as usize),
            None => self.record.fill_all(),
        }
        self.cmd.clear();
        self.pack_hmset(field);
        let replies = self.send(1)?;
        ok_reply(&replies[0])?;
        Ok(self.record.key.len() as u32
            + field.map_or(self.record.value_bytes(), |f| {
                self.record.values[f as usize].len() as u32
            }))
    }

    /// Packs the insert of the current key (HMSET of every field, ZADD to the index) after
    /// what `cmd` holds: two commands.
    fn pack_insert(&mut self) {
        self.record.fill_all();
        self.pack_hmset(None);
        header(&mut self.cmd, 4);
        arg(&mut self.cmd, b"ZADD");
        key_arg(&mut self.cmd, &self.config.key_prefix, INDEX);
        let mut text = [0u8; 21];
        arg(
            &mut self.cmd,
            number(java_hash(&self.record.key) as i64, &mut text),
        );
        key_arg(&mut self.cmd, &self.config.key_prefix, &self.record.key);
    }

    /// Checks the two replies of one insert of `bytes` (key and values).
    fn insert_replies(replies: &[Value], bytes: u32) -> Result<u32, OpError> {
        ok_reply(replies.first().ok_or(PROTOCOL)?)?;
        if matches!(replies.get(1), Some(Value::ServerError(_)) | None) {
            return Err(PROTOCOL);
        }
        Ok(bytes)
    }

    fn record_bytes(&self) -> u32 {
        self.record.key.len() as u32 + self.record.value_bytes()
    }

    fn insert(&mut self) -> Result<u32, OpError> {
        self.cmd.clear();
        self.pack_insert();
        let replies = self.send(2)?;
        Self::insert_replies(&replies, self.record_bytes())
    }

    /// Sends the inserts `queue[from..to]` as one pipeline and reports each.
    fn insert_pipeline(&mut self, from: usize, to: usize, out: &mut Completions) {
        self.cmd.clear();
        self.sizes.clear();
        for i in from..to {
            if let (slot, YcsbOp::Insert { keynum }) = self.queue[i] {
                self.record.set_key(keynum);
                self.record.begin_write(Some(slot));
                self.pack_insert();
                self.sizes.push(self.record_bytes());
            }
        }
        let replies = self.send(2 * (to - from));
        for i in from..to {
            let slot = self.queue[i].0;
            let result = match &replies {
                Ok(r) => {
                    let j = 2 * (i - from);
                    Self::insert_replies(r.get(j..j + 2).unwrap_or_default(), self.sizes[i - from])
                }
                Err(e) => Err(*e),
            };
            self.record.end_write(
                Some(slot),
                crate::targets::write_outcome(&result.map(|n| (n, true))),
            );
            out.push(Completion {
                slot,
                result,
                found: result.is_ok(),
            });
        }
    }

    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        let mut score = [0u8; 21];
        let mut limit = [0u8; 21];
        self.cmd.clear();
        header(&mut self.cmd, 7);
        arg(&mut self.cmd, b"ZRANGEBYSCORE");
        key_arg(&mut self.cmd, &self.config.key_prefix, INDEX);
        arg(
            &mut self.cmd,
            number(java_hash(&self.record.key) as i64, &mut score),
        );
        arg(&mut self.cmd, b"+inf");
        arg(&mut self.cmd, b"LIMIT");
        arg(&mut self.cmd, b"0");
        arg(
            &mut self.cmd,
            number(count.min(i64::MAX as u64) as i64, &mut limit),
        );
        let replies = self.send(1)?;
        let Value::Array(keys) = &replies[0] else {
            return Err(PROTOCOL);
        };
        if keys.is_empty() {
            return Ok((0, false));
        }
        // One round trip for all the records, as a pipeline.
        self.cmd.clear();
        let mut n = 0;
        for k in keys {
            let key = bulk(k).ok_or(PROTOCOL)?;
            let key = key
                .strip_prefix(self.config.key_prefix.as_bytes())
                .ok_or(PROTOCOL)?;
            self.record.key.clear();
            self.record.key.extend_from_slice(key);
            self.pack_read(field);
            n += 1;
        }
        let records = self.send(n)?;
        let mut bytes = 0u32;
        let mut failed = None;
        for (k, reply) in keys.iter().zip(&records) {
            self.record.key.clear();
            let key = bulk(k).unwrap_or_default();
            self.record.key.extend_from_slice(
                key.strip_prefix(self.config.key_prefix.as_bytes())
                    .unwrap_or(key),
            );
            match self.check_read(reply, field) {
                Ok((b, _)) => bytes = bytes.saturating_add(b),
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok((bytes, true)),
        }
    }
}

fn ok_reply(v: &Value) -> Result<(), OpError> {
    match v {
        Value::Okay | Value::SimpleString(_) | Value::Int(_) => Ok(()),
        _ => Err(PROTOCOL),
    }
}

impl YcsbStore for RedisSession {
    fn record(&mut self) -> &mut RecordBuf {
        &mut self.record
    }
    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::read(self, field)
    }
    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::update(self, field).map(|n| (n, true))
    }
    fn insert(&mut self) -> Result<(u32, bool), OpError> {
        RedisSession::insert(self).map(|n| (n, true))
    }
    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError> {
        RedisSession::scan(self, count, field)
    }
}

impl Session for RedisSession {
    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let op = ycsb_op(op)?;
        if self.pipeline && matches!(op, YcsbOp::Insert { .. }) {
            self.queue.push((slot, op));
            return Ok(Submitted::Queued);
        }
        Ok(Submitted::done(self.run(op)))
    }

    #[inline]
    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        match self.queue.len() {
            0 => {}
            1 => {
                let (slot, op) = self.queue[0];
                out.push(Completion::of(slot, self.run(op)));
            }
            n => self.insert_pipeline(0, n, out),
        }
        self.queue.clear();
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<crate::verify::kv::ReadBack> {
        Some(crate::targets::read_back(self, keynum))
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        if self.queue_depth > 1 && !self.pipeline {
            vec![(
                "execution",
                format!(
                    "one insert at a time (queue depth {} asked): a Redis Cluster pipeline would be sent command by command, each insert timed to the last reply",
                    self.queue_depth
                ),
            )]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_packing_and_java_hash() {
        let mut b = Vec::new();
        header(&mut b, 2);
        arg(&mut b, b"GET");
        arg(&mut b, b"k1");
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
        // Java: "user1".hashCode() == 111578633, "hello".hashCode() == 99162322.
        assert_eq!(java_hash(b"hello"), 99162322);
        let mut t = [0u8; 21];
        assert_eq!(number(-42, &mut t), b"-42");
        assert_eq!(number(i64::MIN, &mut t), b"-9223372036854775808");
    }
}
