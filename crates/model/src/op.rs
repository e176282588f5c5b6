//! The operation vocabulary, shared by every layer: what an operation is ([`Op`], built by a
//! workload, executed by a target's session), its kind ([`OpKind`], the index of every
//! recorder's arrays), how it fails ([`OpError`], [`ErrorKind`]), the region of a target that
//! operations address ([`Region`]), and an error in a table of options ([`OptionError`]).
//! Plain data: nothing here allocates per operation or knows a target, a workload or a run.

use serde::{Deserialize, Serialize};

/// What an operation does; recorders index arrays by it. Block targets read, write and fsync;
/// key-value targets read (get, or one step of a sequential scan), write (put), update,
/// insert, scan, read-modify-write and delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpKind {
    Read = 0,
    Write = 1,
    Fsync = 2,
    Update = 3,
    Insert = 4,
    Scan = 5,
    ReadModifyWrite = 6,
    Delete = 7,
    /// A pgbench transaction of the TPC-B-like script (one operation = one transaction).
    TpcbLike = 8,
    /// A pgbench select-only transaction.
    SelectOnly = 9,
    /// A pgbench simple-update transaction.
    SimpleUpdate = 10,
}

impl OpKind {
    pub const COUNT: usize = 11;
    pub const ALL: [OpKind; OpKind::COUNT] = [
        OpKind::Read,
        OpKind::Write,
        OpKind::Fsync,
        OpKind::Update,
        OpKind::Insert,
        OpKind::Scan,
        OpKind::ReadModifyWrite,
        OpKind::Delete,
        OpKind::TpcbLike,
        OpKind::SelectOnly,
        OpKind::SimpleUpdate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "read-modify-write",
            OpKind::Delete => "delete",
            OpKind::TpcbLike => "tpcb-like",
            OpKind::SelectOnly => "select-only",
            OpKind::SimpleUpdate => "simple-update",
        }
    }
}

/// Why an operation failed, as counted in results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    Io = 0,
    NoSpace = 1,
    ShortTransfer = 2,
    Invalid = 3,
    Timeout = 4,
    Connection = 5,
    NotFound = 6,
    Other = 7,
    /// A value read back was not the one written (YCSB's `dataintegrity` check failed, or
    /// a record lacked fields).
    Integrity = 8,
    /// A YCSB insert finished 2^20 or more keys past the oldest insert still in flight: YCSB's
    /// acknowledgement window overflowed ("Too many unacknowledged insertion keys.").
    InsertWindow = 9,
    /// The database refused to commit a transaction: a serialization failure or a deadlock
    /// (SQLSTATE 40001, 40P01). The client rolls back and goes on.
    Serialization = 10,
    /// The server answered that it cannot serve the data now: a Redis Cluster without a master
    /// for the slot (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING) or redirected in a loop.
    Unavailable = 11,
}

impl ErrorKind {
    pub const COUNT: usize = 12;
    pub const ALL: [ErrorKind; ErrorKind::COUNT] = [
        ErrorKind::Io,
        ErrorKind::NoSpace,
        ErrorKind::ShortTransfer,
        ErrorKind::Invalid,
        ErrorKind::Timeout,
        ErrorKind::Connection,
        ErrorKind::NotFound,
        ErrorKind::Other,
        ErrorKind::Integrity,
        ErrorKind::InsertWindow,
        ErrorKind::Serialization,
        ErrorKind::Unavailable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Io => "io",
            ErrorKind::NoSpace => "no-space",
            ErrorKind::ShortTransfer => "short-transfer",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Other => "other",
            ErrorKind::Integrity => "integrity",
            ErrorKind::InsertWindow => "insert-window-full",
            ErrorKind::Serialization => "serialization",
            ErrorKind::Unavailable => "unavailable",
        }
    }

    /// Classifies an errno value.
    pub fn from_errno(errno: i32) -> ErrorKind {
        match errno {
            libc::EIO => ErrorKind::Io,
            libc::ENOSPC | libc::EDQUOT => ErrorKind::NoSpace,
            libc::EINVAL => ErrorKind::Invalid,
            libc::ETIMEDOUT => ErrorKind::Timeout,
            libc::ECONNRESET | libc::ECONNREFUSED | libc::EPIPE | libc::ECONNABORTED => {
                ErrorKind::Connection
            }
            libc::ENOENT => ErrorKind::NotFound,
            _ => ErrorKind::Other,
        }
    }
}

/// A failed operation: its kind and the system's code (an errno for I/O targets; 0 if none).
/// Copy and small, so failing never allocates; messages are made off the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpError {
    pub kind: ErrorKind,
    pub code: i32,
}

impl OpError {
    /// A value read back was not the one written, or a record lacked fields (YCSB's
    /// `dataintegrity`); every database target reports it so.
    pub const INTEGRITY: OpError = OpError {
        kind: ErrorKind::Integrity,
        code: 0,
    };

    pub fn errno(code: i32) -> OpError {
        OpError {
            kind: ErrorKind::from_errno(code),
            code,
        }
    }

    /// A readable message, for reports.
    pub fn message(&self) -> String {
        if self.kind == ErrorKind::ShortTransfer {
            return format!("short transfer ({} bytes)", self.code);
        }
        if self.kind == ErrorKind::InsertWindow {
            return "too many unacknowledged insert keys: YCSB's window of 2^20 keys past the \
                    oldest insert in flight overflowed (insert-window-full)"
                .to_string();
        }
        if self.code > 0 {
            format!(
                "{} ({})",
                std::io::Error::from_raw_os_error(self.code),
                self.kind.name()
            )
        } else {
            self.kind.name().to_string()
        }
    }
}

/// One operation, built by a workload into a slot the worker owns. Never allocates: key-value
/// operations carry a key number, which the session turns into key bytes in its own buffer
/// (see `storlab_workload::kv::KeyFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `len` is a u64 though a transfer fits 32 bits: the worker loop copies an `Op` by 8-byte
    /// words, and a 4-byte `len` stored then loaded as 8 bytes stalls on store forwarding
    /// (perf annotate of the null loop: a fifth of its time).
    Read {
        offset: u64,
        len: u64,
    },
    Write {
        offset: u64,
        len: u64,
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
    /// builds the bytes with its `storlab_workload::ycsb::RecordBuf`).
    Ycsb(YcsbOp),
    /// A pgbench transaction with its random values.
    Pgbench(PgbenchOp),
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
            Op::Pgbench(p) => p.script.kind(),
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

/// One run-phase or load-phase operation. `None` for a field means all fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbOp {
    /// Read one field, or all (`readallfields`).
    Read { keynum: u64, field: Option<u32> },
    /// Rewrite one field, or all (`writeallfields`).
    Update { keynum: u64, field: Option<u32> },
    /// Insert a record with all fields. In the run phase, call
    /// `CoreSource::acknowledge_insert` (storlab_workload) with the key number once the insert is over, whether
    /// it succeeded or not (as YCSB).
    Insert { keynum: u64 },
    /// Scan `count` records from the key, reading one field or all.
    Scan {
        keynum: u64,
        count: u64,
        field: Option<u32>,
    },
    /// Read then update the same record. YCSB chooses the field read (`readallfields`) and the
    /// field written (`writeallfields`) independently, so both are here.
    ReadModifyWrite {
        keynum: u64,
        read_field: Option<u32>,
        write_field: Option<u32>,
    },
}

/// pgbench's built-in scripts (`pgbench -b NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Script {
    /// The TPC-B-like transaction: update an account, read its balance back, update a teller
    /// and a branch, insert a history row (pgbench's default).
    TpcbLike,
    /// The account balance SELECT alone (`pgbench -S`).
    SelectOnly,
    /// The TPC-B-like transaction without the teller and branch updates (`pgbench -N`).
    SimpleUpdate,
}

impl Script {
    pub const ALL: [Script; 3] = [Script::TpcbLike, Script::SelectOnly, Script::SimpleUpdate];

    pub fn name(self) -> &'static str {
        match self {
            Script::TpcbLike => "tpcb-like",
            Script::SelectOnly => "select-only",
            Script::SimpleUpdate => "simple-update",
        }
    }

    pub fn from_name(name: &str) -> Option<Script> {
        Script::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The operation kind its transactions are recorded under (named after the script).
    pub fn kind(self) -> OpKind {
        match self {
            Script::TpcbLike => OpKind::TpcbLike,
            Script::SelectOnly => OpKind::SelectOnly,
            Script::SimpleUpdate => OpKind::SimpleUpdate,
        }
    }

    /// Its transactions change the database (and insert a history row).
    pub fn writes(self) -> bool {
        self != Script::SelectOnly
    }
}

/// One transaction's random values (pgbench's `:aid`, `:bid`, `:tid`, `:delta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgbenchOp {
    pub script: Script,
    pub aid: i32,
    pub bid: i32,
    pub tid: i32,
    pub delta: i32,
}

/// The region of a target that operations address, and where it lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Region {
    pub offset_bytes: u64,
    pub size_bytes: u64,
}

/// An error in a target's options, relative to its table in the study file.
#[derive(Debug, Clone)]
pub struct OptionError {
    /// Key inside the target's table (empty: the table as a whole).
    pub key: String,
    pub message: String,
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

/// What a stored result's workload was (`workload-type` in summary.json): the workload's kind,
/// and for YCSB its phase, since the YCSB brief's table is the run phase's and the load
/// phase is not one of its rows. Reports decide by it, never by matching the stored text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultKind {
    Block,
    DbBench,
    YcsbLoad,
    YcsbRun,
    Pgbench,
    /// Emulated accelerators training on a dataset (MLPerf Storage's model).
    Training,
    /// Checkpoints of a model's state written and read back (MLPerf Storage's checkpointing).
    Checkpoint,
    /// The total over targets, or a name this build does not know (a newer storlab's).
    #[default]
    #[serde(other)]
    Unknown,
}

impl ResultKind {
    /// The name stored in summary.json and shown in reports.
    pub fn name(self) -> &'static str {
        match self {
            ResultKind::Block => "block",
            ResultKind::DbBench => "db-bench",
            ResultKind::YcsbLoad => "ycsb-load",
            ResultKind::YcsbRun => "ycsb-run",
            ResultKind::Pgbench => "pgbench",
            ResultKind::Training => "training",
            ResultKind::Checkpoint => "checkpoint",
            ResultKind::Unknown => "unknown",
        }
    }

    pub fn is_unknown(&self) -> bool {
        *self == ResultKind::Unknown
    }

    /// The workload kind it is a result of.
    pub fn workload_kind(self) -> Option<WorkloadKind> {
        match self {
            ResultKind::Block => Some(WorkloadKind::Block),
            ResultKind::DbBench => Some(WorkloadKind::DbBench),
            ResultKind::YcsbLoad | ResultKind::YcsbRun => Some(WorkloadKind::Ycsb),
            ResultKind::Pgbench => Some(WorkloadKind::Pgbench),
            ResultKind::Training => Some(WorkloadKind::Training),
            ResultKind::Checkpoint => Some(WorkloadKind::Checkpoint),
            ResultKind::Unknown => None,
        }
    }
}

/// The types of workload (a study's `type = "..."` in a workload table), what a target
/// declares it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    Block,
    DbBench,
    Ycsb,
    Pgbench,
    Training,
    Checkpoint,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 6] = [
        WorkloadKind::Block,
        WorkloadKind::DbBench,
        WorkloadKind::Ycsb,
        WorkloadKind::Pgbench,
        WorkloadKind::Training,
        WorkloadKind::Checkpoint,
    ];

    /// The name a study file gives it.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Block => "block",
            WorkloadKind::DbBench => "db-bench",
            WorkloadKind::Ycsb => "ycsb",
            WorkloadKind::Pgbench => "pgbench",
            WorkloadKind::Training => "training",
            WorkloadKind::Checkpoint => "checkpoint",
        }
    }

    pub fn from_name(name: &str) -> Option<WorkloadKind> {
        WorkloadKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The key of its table that chooses its operations (blamed when a target cannot do
    /// one of them).
    pub fn operations_key(self) -> &'static str {
        match self {
            WorkloadKind::Block => "read-share",
            WorkloadKind::DbBench => "benchmark",
            WorkloadKind::Pgbench => "script",
            WorkloadKind::Ycsb => "type",
            WorkloadKind::Training => "format",
            WorkloadKind::Checkpoint => "checkpoints-write",
        }
    }
}

impl std::fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
