//! Plain data at the bottom: the vocabulary every layer shares and that uses no other layer
//! of storlab. The operations ([`op`]: `Op`, its kinds and errors, regions, option errors),
//! seeds ([`seed`]: the stable mixing of seeds and names that workloads and verified writes
//! agree on), RAID geometry ([`raid`]), rate changes ([`rate`]) and the CPU sets workers are
//! pinned to ([`cpus`]).
//!
//! The layers above, from the bottom (checked by `tests/layers.rs`): `units` and `model`,
//! `record`, `verify`, `workload`, `targets`, `study`, `results`, `run`, `report`, `cli`.
//! A module imports only from layers below its own.

pub mod baseline;
pub mod cpus;
pub mod latency_target;
pub mod op;
pub mod raid;
pub mod rate;
pub mod seed;
pub mod units;

pub use op::{
    ErrorKind, Op, OpError, OpKind, OptionError, PgbenchOp, Region, Script, WorkloadKind, YcsbOp,
    option_error,
};
