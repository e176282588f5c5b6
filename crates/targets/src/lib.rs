//! Targets: what operations go to. One file per target type, implementing
//! [`registry::Target`], and one row in the `registry!` list below: nothing else names a
//! target type (the study's checks read each target's declared [`Capabilities`]).
//!
//! A target opens one [`Session`] per worker. A session either executes an operation in
//! `submit` (it says so, and the worker times it alone) or queues it and reports it from
//! `complete`; it never reads the clock. The worker loop is generic over the session type:
//! [`TargetConfig::open`] matches the enum once per worker and calls a [`SessionUser`] with
//! the concrete session, so the loop is monomorphized.

pub mod guard;
pub mod mountinfo;
pub mod netns;
pub mod readback;
pub mod registry;
pub mod session;
pub mod ycsb_store;

registry::registry! {
    Null => null::NullConfig,
    File => file::FileConfig,
    Rocksdb => rocksdb::RocksConfig,
    Redis => redis::RedisConfig,
    Postgres => postgres::PostgresConfig,
    Mongodb => mongodb::MongoConfig,
    Nfs => nfs::NfsConfig,
    Smb => smb::SmbConfig,
    Memcached => memcached::MemcachedConfig,
}

pub use registry::{Target, TargetType, YcsbBinding, check_workload};
pub use session::{
    Capabilities, Completion, Completions, Overlap, Session, SessionUser, Submitted,
};
pub use ycsb_store::{
    YCSB_OPS, YcsbBindingError, YcsbStore, claim_timeout_ms, claim_value, read_back, write_outcome,
    ycsb_op,
};

use std::path::PathBuf;

use storlab_model::{OptionError, Region, option_error};

use storlab_workload::ycsb::CoreWorkload;

/// Errors preparing or opening a target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{0}")]
    Refused(#[from] guard::GuardError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Netns(#[from] netns::NetnsError),
}

impl TargetError {
    pub fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> TargetError {
        TargetError::Io {
            path: path.into(),
            what,
            source,
        }
    }
}

/// Finds a registry row by name.
pub fn find_type(name: &str) -> Option<&'static TargetType> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// Finds the target type of a YCSB binding name (`redis`, `mongodb`, `jdbc`, `basic`, ...) or of
/// YCSB's class name for it (`site.ycsb.db.RedisClient`).
pub fn find_ycsb_binding(name: &str) -> Option<&'static TargetType> {
    REGISTRY.iter().find(|t| {
        t.ycsb
            .as_ref()
            .is_some_and(|y| t.name == name || y.names.contains(&name) || y.classes.contains(&name))
    })
}

use storlab_model::units::redact_url;

/// The server of a target configured by a `url` (`scheme://[user[:password]@]host[:port]/...`):
/// `scheme://host[:port]`, without user, password, path or query.
pub fn url_server(config: &serde_json::Value) -> Option<String> {
    let url = config.get("url")?.as_str()?;
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    (!host.is_empty()).then(|| format!("{scheme}://{host}"))
}

/// Serializes a URL without its password.
pub fn serialize_redacted_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

/// What a worker needs to know to open its session.
#[derive(Debug, Clone)]
pub struct SessionParams {
    pub worker: u32,
    /// The session will write (open for writing).
    pub writes: bool,
    /// What operations may address.
    pub region: Region,
    pub queue_depth: u32,
    pub block_bytes: u32,
    /// A block workload's size draw and offsets: a target with files of several sizes
    /// places each I/O in a smaller one as fio does ([`storlab_workload::block::size_draw`]).
    pub size_draw: Option<storlab_workload::block::size_draw::SizeDraw>,
    /// Fill written buffers with random bytes (else the pattern byte).
    pub random_data: bool,
    pub pattern: u8,
    /// fio's buffer contents (`write-buffers`): written blocks filled by fio's algorithms
    /// instead (then `random_data` is false).
    pub write_buffers: Option<storlab_workload::buffers::WriteBuffers>,
    pub seed: u64,
    /// Key and value shapes of a key-value workload.
    pub kv: Option<storlab_workload::kv::KvShape>,
    /// The YCSB workload whose records the session reads and writes.
    pub ycsb: Option<std::sync::Arc<CoreWorkload>>,
    /// Verified writes: the table of acknowledged generations and this worker's stripe.
    pub verify: Option<storlab_verify::VerifyParams>,
    /// Verified key-value writes: the table of acknowledged writes of every key.
    pub kv_verify: Option<std::sync::Arc<storlab_verify::kv::KvTable>>,
    /// A pgbench workload's session: its client index and the ledger, if verified.
    pub pgbench: Option<PgbenchParams>,
}

/// What a session of a pgbench workload needs besides the operations.
#[derive(Clone)]
pub struct PgbenchParams {
    /// The worker's index among its target's clients (its ledger entry).
    pub client: u32,
    /// The lost-transaction ledger (`verify = true`).
    pub ledger: Option<std::sync::Arc<storlab_verify::ledger::Ledger>>,
}

impl std::fmt::Debug for PgbenchParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client {} ledger {}", self.client, self.ledger.is_some())
    }
}

/// A target readied for a run: the region operations address, and what its sessions share
/// (an open database), kept until the run ends.
pub struct Prepared {
    pub region: Region,
    pub handle: Handle,
}

/// Options of a run that concern targets' safety.
#[derive(Debug, Clone, Default)]
pub struct PrepareOptions {
    /// Devices the user named with `--allow-destroy`.
    pub allow_destroy: Vec<PathBuf>,
    /// The run will write.
    pub writes: bool,
    /// Bytes the workload addresses (for files storlab lays out).
    pub min_size_bytes: u64,
    /// The workload creates its data from nothing (db_bench's fill benchmarks): a database
    /// target starts empty.
    pub fresh: bool,
    /// Print layout progress.
    pub verbose: bool,
    /// The YCSB workload the run uses (servers create its table in `prepare`).
    pub ycsb: Option<std::sync::Arc<CoreWorkload>>,
    /// A pgbench workload's scale: the target initializes pgbench's tables in `prepare` (or
    /// reuses them at that scale).
    pub pgbench_scale: Option<u32>,
}
