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
pub mod null;
pub mod rocksdb;

use std::path::PathBuf;

use serde::Serialize;

use crate::record::{OpError, OpKind};

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

/// A worker's connection to a target.
pub trait Session {
    /// Queues `op` in `slot` (0..queue depth). Synchronous sessions execute it now.
    /// An error here means the operation was not started.
    fn submit(&mut self, slot: u32, op: Op) -> Result<(), OpError>;

    /// Hands queued operations to the system and appends completions to `out`, waiting
    /// until at least `min` have completed (0: do not wait).
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError>;
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
}

/// One registry row: a target type's name, help, options and parser.
pub struct TargetType {
    pub name: &'static str,
    pub summary: &'static str,
    /// (option, meaning) pairs for `storlab targets` and `--help`.
    pub options: &'static [(&'static str, &'static str)],
    pub parse: fn(toml::Table) -> Result<TargetConfig, OptionError>,
}

/// Every target type storlab knows.
pub static REGISTRY: &[TargetType] = &[null::TYPE, file::TYPE, rocksdb::TYPE];

/// Finds a registry row by name.
pub fn find_type(name: &str) -> Option<&'static TargetType> {
    REGISTRY.iter().find(|t| t.name == name)
}

/// The region of a target that operations address, and where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Region {
    pub offset_bytes: u64,
    pub size_bytes: u64,
}

/// What a worker needs to know to open its session.
#[derive(Debug, Clone, Copy)]
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
}

impl TargetConfig {
    pub fn type_name(&self) -> &'static str {
        match self {
            TargetConfig::Null(_) => "null",
            TargetConfig::File(_) => "file",
            TargetConfig::Rocksdb(_) => "rocksdb",
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
        }
    }

    /// Paths whose storage this target measures (for the system capture).
    pub fn paths(&self) -> Vec<PathBuf> {
        match self {
            TargetConfig::Null(_) => Vec::new(),
            TargetConfig::File(c) => vec![c.path.clone()],
            TargetConfig::Rocksdb(c) => vec![c.path.clone()],
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
            (TargetConfig::Rocksdb(_), Handle::None) => Err(TargetError::Invalid(
                "the database was not opened before its sessions".into(),
            )),
        }
    }

    /// Software versions to disclose (library or server), as the target reports them.
    pub fn software(&self, prepared: &Prepared) -> Vec<(String, String)> {
        match (self, &prepared.handle) {
            (TargetConfig::Rocksdb(_), Handle::Rocksdb(s)) => s.software(),
            _ => Vec::new(),
        }
    }

    /// Cleans up after the study (removes files storlab created when asked to).
    pub fn finish(&self) {
        match self {
            TargetConfig::File(c) => c.finish(),
            TargetConfig::Rocksdb(c) => c.finish(),
            TargetConfig::Null(_) => {}
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
