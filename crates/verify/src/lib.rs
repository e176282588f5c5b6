//! Verified writes (`verify = true` on a block workload, as fio's `verify=crc32c`), the part
//! below the targets: every written block carries a [`header`] (magic, target id, offset,
//! generation, block size and a crc32c of the whole block); storlab keeps the last
//! acknowledged generation of every block in a preallocated [`table`] (no allocation, no lock
//! per operation), which sessions fill through a [`Stamper`] (one per worker); a pass's
//! findings go into a [`report`]. Sessions never time anything here.
//!
//! Key-value (YCSB) workloads get the same in [`kv`] (stamped field values, the last
//! acknowledged writes of every key), and pgbench its lost-transaction [`ledger`].
//!
//! The passes that read a target back after the run, and the state files that let
//! `storlab verify` check it later, open sessions and so sit above the targets, in
//! `storlab_engine::verify`.

pub mod header;
pub mod kv;
pub mod ledger;
pub mod mapped;
pub mod report;
pub mod stamper;
pub mod table;

pub use report::{InFlight, InFlightHeld, Verified, VerifyClass, VerifyReport};
pub use stamper::Stamper;
pub use table::VerifyTable;

use std::path::PathBuf;

/// Why verification could not be set up or run (a block found damaged is a result, not an
/// error).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("{path}: not a storlab verify state file ({why})")]
    BadState { path: PathBuf, why: String },
    #[error("verify: {0}")]
    Invalid(String),
}

impl VerifyError {
    pub fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        VerifyError::Io {
            path: path.into(),
            what,
            source,
        }
    }
}

/// What a session needs to stamp and acknowledge verified writes.
#[derive(Debug, Clone)]
pub struct VerifyParams {
    pub table: std::sync::Arc<VerifyTable>,
    /// The worker's index among its target's threads (its stripe of blocks).
    pub thread: u32,
}
