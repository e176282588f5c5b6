//! What the database servers' targets share: YCSB's five verbs on a record
//! ([`YcsbStore`]), one dispatch from a [`YcsbOp`] for every binding, and the claiming of a
//! binding's YCSB properties.

use super::Completion;
use storlab_model::Op;
use storlab_model::YcsbOp;
use storlab_model::{OpError, OpKind};
use storlab_verify::kv::{ReadBack, WriteOutcome};
use storlab_workload::{ycsb::Properties, ycsb::Property};

/// The YCSB operations of a database binding, on the record whose key its [`RecordBuf`]
/// holds: [`YcsbStore::run`] turns a [`YcsbOp`] into them the same way for every binding (the
/// key set first; a read-modify-write reads, then updates only a record it found). Each
/// returns (bytes moved, record found). With `verify`, `run` starts each write (insert,
/// update, the write of a read-modify-write) in the record buffer before the binding fills its
/// values, and ends it with how it went: acknowledged, nothing written (an update of a record
/// that is not there: found is false) or failed.
///
/// [`RecordBuf`]: storlab_workload::ycsb::RecordBuf
pub trait YcsbStore {
    fn record(&mut self) -> &mut storlab_workload::ycsb::RecordBuf;
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
            YcsbOp::Update { field, .. } => {
                self.record().begin_write(None);
                let r = self.update(field);
                self.record().end_write(None, write_outcome(&r));
                r
            }
            YcsbOp::Insert { .. } => {
                self.record().begin_write(None);
                let r = self.insert();
                self.record().end_write(None, write_outcome(&r));
                r
            }
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
                self.record().begin_write(None);
                let written = self.update(write_field);
                self.record().end_write(None, write_outcome(&written));
                let (w, found) = written?;
                Ok((r + w, found))
            }
        }
    }
}

/// How a binding's write went, for the verify table: acknowledged, nothing written (the
/// record was not there), or failed.
#[inline]
pub fn write_outcome(r: &Result<(u32, bool), OpError>) -> WriteOutcome {
    match r {
        Ok((_, true)) => WriteOutcome::Acked,
        Ok((_, false)) => WriteOutcome::NotWritten,
        Err(_) => WriteOutcome::Failed,
    }
}

/// The verify pass's read of record `keynum` through a binding: the whole record, each field
/// noted by the record buffer (see the engine's key-value verify pass, `verify::kv_pass`).
pub fn read_back<S: YcsbStore + ?Sized>(store: &mut S, keynum: u64) -> ReadBack {
    store.record().set_key(keynum);
    store.record().start_probe();
    let result = store.read(None).map(|(_, found)| found);
    ReadBack {
        result,
        observation: store.record().take_probe(),
    }
}

/// The YCSB operation of `op`, or the error a YCSB-only target gives any other operation.
#[inline]
pub fn ycsb_op(op: Op) -> Result<YcsbOp, OpError> {
    match op {
        Op::Ycsb(y) => Ok(y),
        _ => Err(OpError {
            kind: storlab_model::ErrorKind::Invalid,
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

/// A YCSB binding property with a value the target cannot take.
#[derive(Debug, thiserror::Error)]
#[error("{property}: {reason}")]
pub struct YcsbBindingError {
    pub property: Property,
    pub reason: String,
}

/// Claims `name` and returns its value, if set.
pub fn claim_value(props: &mut Properties, name: &str) -> Option<(String, Property)> {
    props.claim(name).map(|p| (p.value.clone(), p.clone()))
}

/// Claims `name`, a binding's timeout in milliseconds (`redis.timeout`,
/// `memcached.opTimeoutMillis`), as the target's `timeout` option (at least 1 ms).
pub fn claim_timeout_ms(
    props: &mut Properties,
    name: &str,
    options: &mut toml::Table,
) -> Result<(), YcsbBindingError> {
    if let Some((v, property)) = claim_value(props, name) {
        let ms: u64 = v.parse().map_err(|_| YcsbBindingError {
            property,
            reason: "expected milliseconds".into(),
        })?;
        options.insert("timeout".into(), format!("{}ms", ms.max(1)).into());
    }
    Ok(())
}

/// What database servers' targets do: YCSB's operations.
pub const YCSB_OPS: [OpKind; 5] = [
    OpKind::Read,
    OpKind::Update,
    OpKind::Insert,
    OpKind::Scan,
    OpKind::ReadModifyWrite,
];

/// What a database server's sessions share: its version, asked once in `prepare`, and the
/// memory limit `prepare` set on it for the run (put back when the run ends).
pub struct ServerShared {
    pub software: Vec<(String, String)>,
    pub memory: Option<crate::server_memory::MemoryLimit>,
}

/// The [`Target`](super::Target) declaration of a database server's target: YCSB workloads,
/// YCSB's operations, the server's version asked once in `prepare` and shared, and the
/// type's own `server_version` and `open_session`. With `memory = METHOD`, `prepare` also
/// calls the type's `METHOD(opts)` for the run's [`MemoryLimit`](crate::server_memory::MemoryLimit).
macro_rules! server_target {
    ($config:ty, $overlap:expr) => {
        $crate::ycsb_store::server_target!(@impl $config, $overlap, |_, _| Ok(None));
    };
    ($config:ty, $overlap:expr, memory = $method:ident) => {
        $crate::ycsb_store::server_target!(@impl $config, $overlap, <$config>::$method);
    };
    (@impl $config:ty, $overlap:expr, $memory:expr) => {
        impl $crate::Target for $config {
            const TYPE: $crate::TargetType = TYPE;
            type Shared = $crate::ycsb_store::ServerShared;

            fn capabilities(&self) -> $crate::Capabilities {
                $crate::Capabilities {
                    workloads: &[storlab_model::WorkloadKind::Ycsb],
                    ops: &$crate::YCSB_OPS,
                    overlap: $overlap,
                    in_process: false,
                    writes_given_buffers: false,
                    reads_records_back: true,
                    keeps_ledger: false,
                }
            }

            fn prepare(
                &self,
                opts: &$crate::PrepareOptions,
            ) -> Result<($crate::Region, Self::Shared), $crate::TargetError> {
                let software = self.server_version(opts)?;
                let memory: fn(
                    &$config,
                    &$crate::PrepareOptions,
                ) -> Result<
                    Option<$crate::server_memory::MemoryLimit>,
                    $crate::TargetError,
                > = $memory;
                let memory = memory(self, opts)?;
                Ok((
                    $crate::Region::default(),
                    $crate::ycsb_store::ServerShared { software, memory },
                ))
            }

            fn open<U: $crate::SessionUser>(
                &self,
                _: &Self::Shared,
                params: &$crate::SessionParams,
                user: U,
            ) -> Result<U::Output, $crate::TargetError> {
                self.open_session(params, user)
            }

            fn software(&self, shared: &Self::Shared) -> Vec<(String, String)> {
                shared.software.clone()
            }

            fn setup_events(&self, shared: &Self::Shared) -> Vec<(String, String)> {
                shared.memory.iter().map(|m| m.event()).collect()
            }
        }
    };
}
pub(crate) use server_target;
