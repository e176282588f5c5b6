//! YCSB's core workload as a library: property files and overrides ([`properties`]), the
//! workload's configuration and per-worker operation sources ([`core`]), the number generators
//! behind key choice ([`generators`]), and record keys, field names and values ([`keys`]).
//!
//! The worker engine drives it: it parses properties into a [`CoreWorkload`], starts a
//! [`CoreRun`] per phase, gives each worker a [`CoreSource`] (run phase) or [`LoadSource`]
//! (load phase), and turns each [`YcsbOp`](storlab_model::YcsbOp) into key-value operations with buffers it owns.

pub mod core;
pub mod generators;
pub mod keys;
pub mod properties;
pub mod record;
pub mod workload;

pub use self::core::{
    CLIENT_PROPERTIES, CORE_WORKLOAD_CLASS, CoreRun, CoreSource, CoreWorkload,
    FieldLengthDistribution, KeyChooser, LoadSource, OpProportions, RequestDistribution,
    ScanLengthDistribution, WorkloadError, thread_op_count,
};
pub use self::keys::InsertOrder;
pub use self::properties::{Origin, Properties, Property, PropertyError};
pub use self::record::RecordBuf;
