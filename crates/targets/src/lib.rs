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
pub mod server_memory;
pub mod session;
pub mod ycsb_store;

registry::registry! {
    Null => null::NullConfig,
    File => file::FileConfig,
    Fileops => fileops::FileOpsConfig,
    Rocksdb => rocksdb::RocksConfig,
    Redis => redis::RedisConfig,
    Postgres => postgres::PostgresConfig,
    Mongodb => mongodb::MongoConfig,
    Nfs => nfs::NfsConfig,
    Smb => smb::SmbConfig,
    Memcached => memcached::MemcachedConfig,
    Dataset => dataset::DatasetConfig,
}

pub use registry::{LedgerKeeper, ReadBackFile, Target, TargetType, YcsbBinding, check_workload};
pub use session::{
    Capabilities, Completion, Completions, Overlap, Session, SessionUser, Submitted,
};
pub use ycsb_store::{
    YCSB_OPS, YcsbBindingError, YcsbStore, claim_timeout_ms, claim_value, read_back, write_outcome,
    ycsb_op,
};

use std::path::PathBuf;

use storlab_model::{OptionError, Region, option_error};

use storlab_workload::Workload;
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

/// What a worker needs to know to open its session: what every workload's session has, and
/// its workload's own part ([`WorkloadParams`]).
#[derive(Debug, Clone)]
pub struct SessionParams {
    pub worker: u32,
    /// The session will write (open for writing).
    pub writes: bool,
    /// What operations may address.
    pub region: Region,
    pub queue_depth: u32,
    pub seed: u64,
    /// What the session's workload type needs besides.
    pub workload: WorkloadParams,
}

/// A session's parameters that belong to one workload type.
#[derive(Debug, Clone)]
pub enum WorkloadParams {
    /// Boxed: far larger than the others (its size draw and buffer contents).
    Block(Box<BlockParams>),
    /// db_bench's key-value workload.
    Kv(KvParams),
    Ycsb(YcsbParams),
    Pgbench(PgbenchParams),
    /// A training reader or a checkpointing rank: its session takes all it needs from its
    /// target's shared state.
    Training,
}

/// What a session of a block workload needs: its blocks' size and contents, and the verify
/// table of its written blocks.
#[derive(Debug, Clone)]
pub struct BlockParams {
    pub block_bytes: u32,
    /// The size draw and offsets: a target with files of several sizes places each I/O in a
    /// smaller one as fio does ([`storlab_workload::block::size_draw`]).
    pub size_draw: Option<storlab_workload::block::size_draw::SizeDraw>,
    /// Fill written buffers with random bytes (else the pattern byte).
    pub random_data: bool,
    pub pattern: u8,
    /// fio's buffer contents (`write-buffers`): written blocks filled by fio's algorithms
    /// instead (then `random_data` is false).
    pub write_buffers: Option<storlab_workload::buffers::WriteBuffers>,
    /// Verified writes: the table of acknowledged generations and this worker's stripe.
    pub verify: Option<storlab_verify::VerifyParams>,
    /// The worker's place among the run's workers sharing a dedupe working set (fio's
    /// `dedupe_global`), given by the run.
    pub dedupe_place: Option<storlab_workload::working_set::Participant>,
}

/// What a session of db_bench's key-value workload needs.
#[derive(Debug, Clone)]
pub struct KvParams {
    /// Key and value shapes.
    pub shape: storlab_workload::kv::KvShape,
    /// Verified writes: the table of acknowledged writes of every key.
    pub verify: Option<std::sync::Arc<storlab_verify::kv::KvTable>>,
}

/// What a session of a YCSB workload needs.
#[derive(Debug, Clone)]
pub struct YcsbParams {
    /// The YCSB workload whose records the session reads and writes.
    pub core: std::sync::Arc<CoreWorkload>,
    /// Verified writes: the table of acknowledged writes of every key.
    pub verify: Option<std::sync::Arc<storlab_verify::kv::KvTable>>,
}

/// What verifies a workload's writes, built by the run before its workers start and shared by
/// their sessions.
#[derive(Clone, Default)]
pub struct SessionTables {
    /// A block workload's table of acknowledged generations and this worker's stripe.
    pub blocks: Option<storlab_verify::VerifyParams>,
    /// A db_bench or YCSB workload's table of acknowledged writes of every key.
    pub kv: Option<std::sync::Arc<storlab_verify::kv::KvTable>>,
    /// A pgbench workload's lost-transaction ledger.
    pub ledger: Option<std::sync::Arc<storlab_verify::ledger::Ledger>>,
}

impl WorkloadParams {
    /// The part of `w`'s sessions' parameters that belongs to its type: `client` is the
    /// worker's index among its target's clients, `tables` what verifies its writes.
    pub fn of(w: &Workload, client: u32, tables: SessionTables) -> WorkloadParams {
        match w {
            Workload::Block(b) => WorkloadParams::Block(Box::new(BlockParams {
                block_bytes: b.block_size.0 as u32,
                size_draw: Some(storlab_workload::block::size_draw::SizeDraw::of(b)),
                random_data: b.write_data == storlab_workload::WriteData::Random
                    && b.write_buffers.is_none(),
                pattern: b.write_pattern,
                write_buffers: b.write_buffers.clone(),
                verify: tables.blocks,
                dedupe_place: None,
            })),
            Workload::DbBench(k) => WorkloadParams::Kv(KvParams {
                shape: k.shape(),
                verify: tables.kv,
            }),
            Workload::Ycsb(y) => WorkloadParams::Ycsb(YcsbParams {
                core: std::sync::Arc::clone(&y.core),
                verify: tables.kv,
            }),
            Workload::Pgbench(_) => WorkloadParams::Pgbench(PgbenchParams {
                client,
                ledger: tables.ledger,
            }),
            // A training reader's session takes all it needs from its target's dataset.
            Workload::Training(_) | Workload::Checkpoint(_) => WorkloadParams::Training,
        }
    }
}

impl BlockParams {
    /// Blocks of `block_bytes` filled with zeros, unverified, offsets drawn uniformly.
    pub fn zeros(block_bytes: u32) -> BlockParams {
        BlockParams {
            block_bytes,
            size_draw: None,
            random_data: false,
            pattern: 0,
            write_buffers: None,
            verify: None,
            dedupe_place: None,
        }
    }
}

impl SessionParams {
    /// The block workload's part, if the session runs one.
    pub fn block(&self) -> Option<&BlockParams> {
        match &self.workload {
            WorkloadParams::Block(b) => Some(b),
            _ => None,
        }
    }

    /// The block workload's part, or why a target that runs only block workloads cannot open
    /// this session (the study's checks refuse it before a run).
    pub fn block_only(&self, target: &str) -> Result<&BlockParams, TargetError> {
        self.block().ok_or_else(|| {
            TargetError::Invalid(format!("a {target} target runs block workloads only"))
        })
    }

    /// db_bench's key and value shapes, if the session runs its workload.
    pub fn kv_shape(&self) -> Option<storlab_workload::kv::KvShape> {
        match &self.workload {
            WorkloadParams::Kv(k) => Some(k.shape),
            _ => None,
        }
    }

    /// The YCSB workload, if the session runs one.
    pub fn ycsb(&self) -> Option<&CoreWorkload> {
        match &self.workload {
            WorkloadParams::Ycsb(y) => Some(&y.core),
            _ => None,
        }
    }

    /// The table of acknowledged key-value writes, if a db_bench or YCSB workload verifies.
    pub fn kv_verify(&self) -> Option<&std::sync::Arc<storlab_verify::kv::KvTable>> {
        match &self.workload {
            WorkloadParams::Kv(k) => k.verify.as_ref(),
            WorkloadParams::Ycsb(y) => y.verify.as_ref(),
            _ => None,
        }
    }

    /// The pgbench workload's part, if the session runs one.
    pub fn pgbench(&self) -> Option<&PgbenchParams> {
        match &self.workload {
            WorkloadParams::Pgbench(p) => Some(p),
            _ => None,
        }
    }
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
    /// A training workload's dataset (the dataset target writes it in `prepare`, or finds
    /// it).
    pub training: Option<TrainingPrep>,
    /// A checkpoint workload's layout (the dataset target claims its folder in `prepare`).
    pub checkpoint: Option<dataset::checkpoint::CheckpointPrep>,
}

/// What a dataset target needs of a training workload to prepare.
#[derive(Debug, Clone)]
pub struct TrainingPrep {
    pub dataset: std::sync::Arc<storlab_workload::training::dataset::Dataset>,
    /// The readers' largest read, bytes.
    pub read_bytes: u64,
    /// The folder under the target's path that holds this dataset (the model's name).
    pub folder: String,
}
