//! Targets: what operations go to. One file per target type, one [`TargetConfig`] variant and
//! one [`REGISTRY`] row each.
//!
//! A target opens one [`Session`] per worker. Sessions queue operations into slots, hand them
//! to the system and report completions; they never read the clock (the worker times them).
//! Synchronous targets execute in `submit` and declare a queue depth of one. The worker loop
//! is generic over the session type: [`TargetConfig::open`] matches the enum once per worker
//! and calls a [`SessionUser`] with the concrete session, so the loop is monomorphized.

pub mod file;
pub mod guard;
pub mod mongodb;
pub mod null;
pub mod postgres;
pub mod redis;
pub mod rocksdb;

use std::path::PathBuf;

use serde::Serialize;

use crate::record::{OpError, OpKind};
use crate::workload::ycsb::{CoreWorkload, Properties, Property, YcsbOp};

/// One operation, built by a workload into a slot the worker owns. Never allocates: key-value
/// operations carry a key number, which the session turns into key bytes in its own buffer
/// (see [`crate::workload::kv::KeyFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read {
        offset: u64,
        len: u32,
    },
    Write {
        offset: u64,
        len: u32,
    },
    Fsync,
    /// Read one key's value.
    Get {
        key: u64,
    },
    /// Write one key's whole value.
    Put {
        key: u64,
    },
    /// Read the next key of a sequential scan (from the first key; wraps at the end).
    Next,
    /// Read a key's value, then write a new one (db_bench's updaterandom).
    ReadModifyWrite {
        key: u64,
    },
    Delete {
        key: u64,
    },
    /// A YCSB operation on a record of fields (key numbers and field indexes; the session
    /// builds the bytes with its [`crate::workload::ycsb::RecordBuf`]).
    Ycsb(YcsbOp),
}

impl Op {
    #[inline]
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Read { .. } | Op::Get { .. } | Op::Next => OpKind::Read,
            Op::Write { .. } | Op::Put { .. } => OpKind::Write,
            Op::Fsync => OpKind::Fsync,
            Op::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
            Op::Delete { .. } => OpKind::Delete,
            Op::Ycsb(y) => match y {
                YcsbOp::Read { .. } => OpKind::Read,
                YcsbOp::Update { .. } => OpKind::Update,
                YcsbOp::Insert { .. } => OpKind::Insert,
                YcsbOp::Scan { .. } => OpKind::Scan,
                YcsbOp::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
            },
        }
    }

    /// The key number a YCSB insert creates (the run phase acknowledges it on completion).
    #[inline]
    pub fn inserted_key(&self) -> Option<u64> {
        match self {
            Op::Ycsb(YcsbOp::Insert { keynum }) => Some(*keynum),
            _ => None,
        }
    }
}

/// One finished operation: its slot and the bytes moved (or why it failed), and whether the
/// key it addressed was there (always true for block operations).
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u32,
    pub result: Result<u32, OpError>,
    pub found: bool,
}

/// A fixed-capacity list of completions, allocated once per worker.
pub struct Completions {
    items: Vec<Completion>,
}

impl Completions {
    pub fn with_capacity(n: usize) -> Completions {
        Completions {
            items: Vec::with_capacity(n),
        }
    }

    /// Adds a completion. Sessions never have more completions than slots, so this never
    /// grows the buffer.
    #[inline]
    pub fn push(&mut self, c: Completion) {
        debug_assert!(self.items.len() < self.items.capacity());
        self.items.push(c);
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes all completions in order.
    #[inline]
    pub fn drain(&mut self) -> std::vec::Drain<'_, Completion> {
        self.items.drain(..)
    }
}

/// The YCSB operations of a database binding, on the record whose key its [`RecordBuf`]
/// holds: [`YcsbStore::run`] turns a [`YcsbOp`] into them the same way for every binding (the
/// key set first; a read-modify-write reads, then updates only a record it found). Each
/// returns (bytes moved, record found).
///
/// [`RecordBuf`]: crate::workload::ycsb::RecordBuf
pub trait YcsbStore {
    fn record(&mut self) -> &mut crate::workload::ycsb::RecordBuf;
    fn read(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError>;
    fn update(&mut self, field: Option<u32>) -> Result<(u32, bool), OpError>;
    fn insert(&mut self) -> Result<(u32, bool), OpError>;
    fn scan(&mut self, count: u64, field: Option<u32>) -> Result<(u32, bool), OpError>;

    #[inline]
    fn run(&mut self, op: YcsbOp) -> Result<(u32, bool), OpError> {
        let keynum = match op {
            YcsbOp::Read { keynum, .. }
            | YcsbOp::Update { keynum, .. }
            | YcsbOp::Insert { keynum }
            | YcsbOp::Scan { keynum, .. }
            | YcsbOp::ReadModifyWrite { keynum, .. } => keynum,
        };
        self.record().set_key(keynum);
        match op {
            YcsbOp::Read { field, .. } => self.read(field),
            YcsbOp::Update { field, .. } => self.update(field),
            YcsbOp::Insert { .. } => self.insert(),
            YcsbOp::Scan { count, field, .. } => self.scan(count, field),
            YcsbOp::ReadModifyWrite {
                read_field,
                write_field,
                ..
            } => {
                let (r, found) = self.read(read_field)?;
                if !found {
                    return Ok((0, false));
                }
                let (w, found) = self.update(write_field)?;
                Ok((r + w, found))
            }
        }
    }
}

/// The YCSB operation of `op`, or the error a YCSB-only target gives any other operation.
#[inline]
pub fn ycsb_op(op: Op) -> Result<YcsbOp, OpError> {
    match op {
        Op::Ycsb(y) => Ok(y),
        _ => Err(OpError {
            kind: crate::record::ErrorKind::Invalid,
            code: libc::EINVAL,
        }),
    }
}

impl Completion {
    /// The completion of `slot` from a binding's (bytes, found) result.
    #[inline]
    pub fn of(slot: u32, outcome: Result<(u32, bool), OpError>) -> Completion {
        match outcome {
            Ok((bytes, found)) => Completion {
                slot,
                result: Ok(bytes),
                found,
            },
            Err(e) => Completion {
                slot,
                result: Err(e),
                found: false,
            },
        }
    }
}

/// A worker's connection to a target.
pub trait Session {
    /// Queues `op` in `slot` (0..queue depth). Synchronous sessions execute it now.
    /// An error here means the operation was not started.
    fn submit(&mut self, slot: u32, op: Op) -> Result<(), OpError>;

    /// Hands queued operations to the system and appends completions to `out`, waiting
    /// until at least `min` have completed (0: do not wait).
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError>;

    /// What the session actually runs with, where it may differ from what was asked (a
    /// fallback the kernel forced, say), as (key, value) pairs for the summary and the
    /// disclosure.
    fn used(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// Something that runs with a concrete session type: the worker loop.
pub trait SessionUser {
    type Output;
    fn run<S: Session>(self, session: S) -> Self::Output;
}

/// What a target can do, checked when a study is planned.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    pub ops: &'static [OpKind],
    /// Highest queue depth a session supports (1 for synchronous engines).
    pub max_queue_depth: u32,
}

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

/// An error in a target's options, relative to its table in the study file.
#[derive(Debug, Clone)]
pub struct OptionError {
    /// Key inside the target's table (empty: the table as a whole).
    pub key: String,
    pub message: String,
}

/// A configured target, as validated from a study file.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum TargetConfig {
    Null(null::NullConfig),
    File(file::FileConfig),
    Rocksdb(rocksdb::RocksConfig),
    Redis(redis::RedisConfig),
    Postgres(postgres::PostgresConfig),
    Mongodb(mongodb::MongoConfig),
}

/// One registry row: a target type's name, help, options and parser.
pub struct TargetType {
    pub name: &'static str,
    pub summary: &'static str,
    /// (option, meaning) pairs for `storlab targets` and `--help`.
    pub options: &'static [(&'static str, &'static str)],
    pub parse: fn(toml::Table) -> Result<TargetConfig, OptionError>,
    /// Names YCSB gives this kind of database on its command line (`-db`, binding name).
    pub ycsb_names: &'static [&'static str],
    /// Turns the binding's YCSB properties (`redis.host`, `mongodb.url`, ...) into this
    /// target's option table, claiming them; None: the target takes no YCSB workloads.
    pub ycsb_options: Option<fn(&mut Properties) -> Result<toml::Table, YcsbBindingError>>,
}

/// A YCSB binding property with a value the target cannot take.
#[derive(Debug, thiserror::Error)]
#[error("{property}: {reason}")]
pub struct YcsbBindingError {
    pub property: Property,
    pub reason: String,
}

/// Every target type storlab knows.
pub static REGISTRY: &[TargetType] = &[
    null::TYPE,
    file::TYPE,
    rocksdb::TYPE,
    redis::TYPE,
    postgres::TYPE,
    mongodb::TYPE,
];

/// Finds a registry row by name.
pub fn find_type(name: &str) -> Option<&'static TargetType> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// Finds the target type of a YCSB binding name (`redis`, `mongodb`, `jdbc`, `basic`, ...).
pub fn find_ycsb_binding(name: &str) -> Option<&'static TargetType> {
    REGISTRY
        .iter()
        .find(|t| t.ycsb_options.is_some() && (t.name == name || t.ycsb_names.contains(&name)))
}

/// A connection URL without its password (`scheme://user:secret@host` becomes
/// `scheme://user:<redacted>@host`), for results and plans.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split(':').next().unwrap_or("");
            let hidden = if userinfo.contains(':') {
                ":<redacted>"
            } else {
                ""
            };
            format!("{}{user}{hidden}{}", &url[..scheme_end + 3], &rest[at..])
        }
        None => url.to_string(),
    }
}

/// Serializes a URL without its password.
pub fn serialize_redacted_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

/// Claims `name` and returns its value, if set.
pub fn claim_value(props: &mut Properties, name: &str) -> Option<(String, Property)> {
    props.claim(name).map(|p| (p.value.clone(), p.clone()))
}

/// What database servers' targets do: YCSB's operations.
pub const YCSB_OPS: [OpKind; 5] = [
    OpKind::Read,
    OpKind::Update,
    OpKind::Insert,
    OpKind::Scan,
    OpKind::ReadModifyWrite,
];

/// The region of a target that operations address, and where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Region {
    pub offset_bytes: u64,
    pub size_bytes: u64,
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
    /// Fill written buffers with random bytes (else the pattern byte).
    pub random_data: bool,
    pub pattern: u8,
    pub seed: u64,
    /// Key and value shapes of a key-value workload.
    pub kv: Option<crate::workload::kv::KvShape>,
    /// The YCSB workload whose records the session reads and writes.
    pub ycsb: Option<std::sync::Arc<CoreWorkload>>,
}

/// A target readied for a run: the region operations address, and what its sessions share
/// (an open database), kept until the run ends.
pub struct Prepared {
    pub region: Region,
    pub handle: Handle,
}

/// What a target's sessions share during a run.
pub enum Handle {
    None,
    Rocksdb(rocksdb::Shared),
    /// A database server's version, asked once in `prepare`.
    Server(Vec<(String, String)>),
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
}

impl TargetConfig {
    pub fn type_name(&self) -> &'static str {
        match self {
            TargetConfig::Null(_) => "null",
            TargetConfig::File(_) => "file",
            TargetConfig::Rocksdb(_) => "rocksdb",
            TargetConfig::Redis(_) => "redis",
            TargetConfig::Postgres(_) => "postgres",
            TargetConfig::Mongodb(_) => "mongodb",
        }
    }

    /// The target runs inside storlab's process, on the worker threads (an embedded engine):
    /// their CPU time is the target's work too.
    pub fn in_process(&self) -> bool {
        #[allow(clippy::match_like_matches_macro)]
        match self {
            TargetConfig::Rocksdb(_) => true,
            _ => false,
        }
    }

    pub fn capabilities(&self) -> Capabilities {
        match self {
            TargetConfig::Null(c) => c.capabilities(),
            TargetConfig::File(c) => c.capabilities(),
            TargetConfig::Rocksdb(c) => c.capabilities(),
            TargetConfig::Postgres(_) => Capabilities {
                ops: &YCSB_OPS,
                max_queue_depth: 1,
            },
            // Queued inserts go to the server as one insertMany (YCSB's batchsize), or as one
            // Redis pipeline.
            TargetConfig::Redis(_) | TargetConfig::Mongodb(_) => Capabilities {
                ops: &YCSB_OPS,
                max_queue_depth: 1024,
            },
        }
    }

    /// Paths whose storage this target measures (for the system capture).
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            TargetConfig::Null(_) => Vec::new(),
            TargetConfig::File(c) => vec![c.path.clone()],
            TargetConfig::Rocksdb(c) => vec![c.path.clone()],
            TargetConfig::Redis(_) | TargetConfig::Postgres(_) | TargetConfig::Mongodb(_) => {
                Vec::new()
            }
        }
    }

    /// Readies the target before its workers open sessions (checks safety, lays out files,
    /// opens databases) and returns the region operations may address.
    pub fn prepare(&self, opts: &PrepareOptions) -> Result<Prepared, TargetError> {
        let (region, handle) = match self {
            TargetConfig::Null(c) => (c.region(), Handle::None),
            TargetConfig::File(c) => (c.prepare(opts)?, Handle::None),
            TargetConfig::Rocksdb(c) => {
                let shared = c.prepare(opts)?;
                (
                    Region {
                        offset_bytes: 0,
                        size_bytes: 0,
                    },
                    Handle::Rocksdb(shared),
                )
            }
            TargetConfig::Redis(c) => (Region::default(), Handle::Server(c.prepare(opts)?)),
            TargetConfig::Postgres(c) => (Region::default(), Handle::Server(c.prepare(opts)?)),
            TargetConfig::Mongodb(c) => (Region::default(), Handle::Server(c.prepare(opts)?)),
        };
        Ok(Prepared { region, handle })
    }

    /// Opens a session for one worker and runs `user` with it.
    pub fn open<U: SessionUser>(
        &self,
        prepared: &Prepared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        match (self, &prepared.handle) {
            (TargetConfig::Null(c), _) => Ok(user.run(c.open(params))),
            (TargetConfig::File(c), _) => c.open(params, user),
            (TargetConfig::Rocksdb(c), Handle::Rocksdb(shared)) => c.open(shared, params, user),
            (TargetConfig::Rocksdb(_), _) => Err(TargetError::Invalid(
                "the database was not opened before its sessions".into(),
            )),
            (TargetConfig::Redis(c), _) => c.open(params, user),
            (TargetConfig::Postgres(c), _) => c.open(params, user),
            (TargetConfig::Mongodb(c), _) => c.open(params, user),
        }
    }

    /// Software versions to disclose (library or server), as the target reports them.
    pub fn software(&self, prepared: &Prepared) -> Vec<(String, String)> {
        match (self, &prepared.handle) {
            (TargetConfig::Rocksdb(_), Handle::Rocksdb(s)) => s.software(),
            (_, Handle::Server(v)) => v.clone(),
            _ => Vec::new(),
        }
    }

    /// Cleans up after the study (removes files storlab created when asked to).
    pub fn finish(&self) {
        match self {
            TargetConfig::File(c) => c.finish(),
            TargetConfig::Rocksdb(c) => c.finish(),
            TargetConfig::Null(_)
            | TargetConfig::Redis(_)
            | TargetConfig::Postgres(_)
            | TargetConfig::Mongodb(_) => {}
        }
    }
}

/// Turns a serde error from a target's table into an [`OptionError`].
pub fn option_error(e: toml::de::Error) -> OptionError {
    let text = e.to_string();
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("in `").and_then(|k| k.strip_suffix('`')))
        .map(str::to_string)
        .or_else(|| {
            ["unknown field `", "missing field `"].iter().find_map(|p| {
                let m = e.message();
                let start = m.find(p)? + p.len();
                let end = m[start..].find('`')? + start;
                Some(m[start..end].to_string())
            })
        })
        .unwrap_or_default();
    OptionError {
        key,
        message: e.message().trim().to_string(),
    }
}
