//! Plain data at the bottom: the vocabulary every layer shares and that uses no other layer
//! of storlab. The operations ([`op`]: `Op`, its kinds and errors, regions, option errors),
//! seeds ([`seed`]: the stable mixing of seeds and names that workloads and verified writes
//! agree on), RAID geometry ([`raid`]), rate changes ([`rate`]) and the CPU sets workers are
//! pinned to ([`cpus`]), what a training run's emulated accelerators did ([`training`]), and fio's jobs as `storlab fio` ran them, stored for its reports
//! ([`fio_jobs`]).
//!
//! The crates above it, from the bottom: record, verify, workload, targets, study, results,
//! then engine and report side by side, then cli (docs/architecture.md draws them). Units
//! of measure ([`units`]: sizes, durations, times, rates, URL redaction) live here too.

pub mod baseline;
pub mod cpus;
pub mod fio_jobs;
pub mod latency_target;
pub mod op;
pub mod raid;
pub mod rate;
pub mod seed;
pub mod training;
pub mod units;

pub use op::{
    ErrorKind, Op, OpError, OpKind, OptionError, PgbenchOp, Region, Script, WorkloadKind, YcsbOp,
    option_error,
};
