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
mod resp;
mod session;

use session::{Link, error_of};
pub use session::RedisSession;

use std::time::Duration;

use redis::{ConnectionLike, Value};
use serde::{Deserialize, Serialize};

use storlab_model::{OpKind, ErrorKind, OpError};
use crate::{Completion, Completions, OptionError, Overlap, PrepareOptions, Session, SessionParams, SessionUser, Submitted, TargetConfig, TargetError, TargetType, YcsbBinding, YcsbBindingError, YcsbStore, claim_timeout_ms, claim_value, option_error, ycsb_op};
use storlab_model::Op;
use storlab_model::units::Dur;
use storlab_model::YcsbOp;
use storlab_workload::{ycsb::Properties, ycsb::RecordBuf};

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
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &[],
        classes: &["site.ycsb.db.RedisClient"],
        batch: Some("redis.pipeline"),
        options: ycsb_options,
    }),
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
    claim_timeout_ms(props, "redis.timeout", &mut t)?;
    Ok(t)
}

/// The sorted set YCSB's redis binding keeps every key in, for scans.
const INDEX: &[u8] = b"_indices";

// Queued inserts go to the server together (a pipeline, an insertMany); other operations
// run one at a time.
crate::ycsb_store::server_target!(
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
        let Some(w) = params.ycsb() else {
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
                .with_verify(params.kv_verify(), params.queue_depth),
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
