//! The `null` target: completes every operation at once, moving no data. It measures storlab
//! itself. For tests of the engine it can stall once, like a device that hangs.
//!
//! As YCSB's BasicDB (`-db basic`) it takes the client's side of each YCSB operation: it
//! builds the operation's key into its record buffer, as YCSB's client builds the key before
//! calling BasicDB; only the database is missing.

use serde::{Deserialize, Serialize};

use storlab_model::{OpError, OpKind};
use crate::{Capabilities, Completion, Completions, OptionError, Overlap, PrepareOptions, Region, Session, SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType, YcsbBinding, option_error};
use storlab_model::Op;
use storlab_model::units::{Bytes, Dur};
use storlab_model::YcsbOp;
use storlab_workload::ycsb::RecordBuf;

pub const TYPE: TargetType = TargetType {
    name: "null",
    summary: "completes every operation at once; measures storlab itself",
    options: &[
        (
            "size",
            "bytes of the virtual address space operations address (default 1TiB)",
        ),
        (
            "stall-after-ops",
            "each session stalls once after this many operations (testing)",
        ),
        ("stall", "how long that stall lasts, e.g. \"500ms\""),
        (
            "stall-worker",
            "only this worker's session stalls (0 = the first; default: every session)",
        ),
    ],
    parse,
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &["basic"],
        classes: &["site.ycsb.BasicDB"],
        batch: None,
        options: ycsb_options,
    }),
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NullConfig {
    #[serde(default = "default_size")]
    pub size: Bytes,
    pub stall_after_ops: Option<u64>,
    pub stall: Option<Dur>,
    pub stall_worker: Option<u32>,
}

fn default_size() -> Bytes {
    Bytes(1 << 40)
}

/// YCSB's `basic` binding (BasicDB) maps to the null target; it takes no properties here
/// (BasicDB's `basicdb.verbose` and `basicdb.simulatedelay` are left unclaimed, so refused).
fn ycsb_options(
    _: &mut storlab_workload::ycsb::Properties,
) -> Result<toml::Table, crate::YcsbBindingError> {
    Ok(toml::Table::new())
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: NullConfig = table.try_into().map_err(option_error)?;
    if c.stall_worker.is_some() && c.stall.is_none() {
        return Err(OptionError {
            key: "stall-worker".into(),
            message: "`stall-worker` needs `stall` and `stall-after-ops`".into(),
        });
    }
    if c.stall_after_ops.is_some() != c.stall.is_some() {
        return Err(OptionError {
            key: if c.stall.is_some() {
                "stall-after-ops"
            } else {
                "stall"
            }
            .into(),
            message: "`stall` and `stall-after-ops` go together: give both or neither".into(),
        });
    }
    if c.size.0 == 0 {
        return Err(OptionError {
            key: "size".into(),
            message: "size must be above 0".into(),
        });
    }
    Ok(TargetConfig::Null(c))
}

impl Target for NullConfig {
    const TYPE: TargetType = TYPE;
    type Shared = ();

    fn region_problem(
        &self,
        block: Bytes,
        workload_name: &str,
    ) -> Option<(&'static str, String)> {
        let too_small = |room: u64| room < block.0;
        too_small(self.size.0).then(|| {
            (
                "size",
                format!(
                    "size {} is smaller than one block of workload `{workload_name}` (block-size {block})",
                    self.size
                ),
            )
        })
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[storlab_model::WorkloadKind::Block, storlab_model::WorkloadKind::DbBench, storlab_model::WorkloadKind::Ycsb, storlab_model::WorkloadKind::Pgbench],
            ops: &OpKind::ALL,
            // As fio's null engine: queued operations all complete at the next reap.
            overlap: Overlap::Concurrent {
                max_queue_depth: 65536,
            },
            in_process: false,
            writes_given_buffers: true,
            reads_records_back: false,
            keeps_ledger: false,
        }
    }

    fn prepare(&self, _: &PrepareOptions) -> Result<(Region, ()), TargetError> {
        Ok((self.region(), ()))
    }

    fn open<U: SessionUser>(
        &self,
        _: &(),
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        Ok(user.run(self.session(params)))
    }
}

impl NullConfig {
    pub fn region(&self) -> Region {
        Region {
            offset_bytes: 0,
            size_bytes: self.size.0,
        }
    }

    /// A session: at queue depth 1 it completes each operation in `submit`, as fio's null
    /// engine does at iodepth 1; above, it queues them until the next reap.
    pub fn session(&self, params: &SessionParams) -> NullSession {
        NullSession {
            at_submit: params.queue_depth <= 1,
            done: Vec::with_capacity(params.queue_depth as usize),
            ops: 0,
            stall_after_ops: match self.stall_worker {
                Some(w) if w != params.worker => u64::MAX,
                _ => self.stall_after_ops.unwrap_or(u64::MAX),
            },
            stall: self.stall.map(|d| d.0).unwrap_or_default(),
            value_bytes: params.kv_shape().map_or(0, |kv| kv.value_bytes),
            record_bytes: params.ycsb().map_or(0, |w| {
                (w.field_count as u64 * w.field_length_bytes).min(u32::MAX as u64) as u32
            }),
            record: params
                .ycsb()
                .map(|w| RecordBuf::new(w, params.seed ^ ((params.worker as u64 + 1) << 32))),
        }
    }
}

/// A null session: completions wait in a preallocated list until reaped.
pub struct NullSession {
    /// Complete in `submit` (queue depth 1).
    at_submit: bool,
    done: Vec<Completion>,
    ops: u64,
    stall_after_ops: u64,
    /// Bytes a key-value operation counts as moved (the workload's value size).
    value_bytes: u32,
    /// Bytes a YCSB operation on a whole record counts as moved (fields x field length).
    record_bytes: u32,
    stall: std::time::Duration,
    /// A YCSB workload's record: keys and values are built as a binding builds them.
    record: Option<RecordBuf>,
}

impl NullSession {
    /// What YCSB's client does for an operation before it calls BasicDB: the key. Values are
    /// not generated: BasicDB never reads them (YCSB's values are lazy iterators that a
    /// binding fills when it reads them; storlab's bindings fill theirs the same way).
    #[inline]
    fn build(&mut self, op: YcsbOp) {
        let Some(r) = &mut self.record else {
            return;
        };
        let keynum = match op {
            YcsbOp::Read { keynum, .. }
            | YcsbOp::Scan { keynum, .. }
            | YcsbOp::Update { keynum, .. }
            | YcsbOp::Insert { keynum }
            | YcsbOp::ReadModifyWrite { keynum, .. } => keynum,
        };
        r.set_key(keynum);
        std::hint::black_box(&r.key);
    }
}

impl Session for NullSession {
    /// Queued completions are handed over in `complete`; nothing is started before.
    fn starts_in_complete(&self) -> bool {
        true
    }

    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        self.ops += 1;
        if self.ops == self.stall_after_ops {
            std::thread::sleep(self.stall);
        }
        let bytes = match op {
            Op::Read { len, .. } | Op::Write { len, .. } => len as u32,
            Op::Fsync | Op::Delete { .. } | Op::Pgbench(_) => 0,
            Op::Get { .. } | Op::Put { .. } | Op::Next | Op::ReadModifyWrite { .. } => {
                self.value_bytes
            }
            Op::Ycsb(y) => {
                self.build(y);
                self.record_bytes
            }
        };
        if self.at_submit {
            return Ok(Submitted::Done {
                result: Ok(bytes),
                found: true,
            });
        }
        self.done.push(Completion {
            slot,
            result: Ok(bytes),
            found: true,
        });
        Ok(Submitted::Queued)
    }

    #[inline]
    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        for c in self.done.drain(..) {
            out.push(c);
        }
        Ok(())
    }
}
