//! Verified key-value writes (`verify = true` on a `ycsb` workload): every field value an
//! insert, update or read-modify-write sets carries a [`header`] stamp (magic, key number,
//! generation, crc32c of key, field name and value) over YCSB's deterministic value; storlab
//! keeps each key's acknowledged writes in a preallocated [`table`] (24 bytes per key, no
//! allocation or lock per operation), and after the run a [`pass`] reads every key with an
//! acknowledged write back through the target and classifies it (intact, lost, missing,
//! corrupt, unreadable) into a [`report`]. The table can be saved and checked later
//! ([`state`]).
//!
//! Sessions stamp through their [`RecordBuf`](crate::workload::ycsb::RecordBuf), which holds a
//! [`KvStamper`]: [`YcsbStore::run`](crate::targets::YcsbStore::run) starts and ends the
//! writes a binding runs on the spot, and bindings that batch inserts (a Redis pipeline, a
//! MongoDB insertMany) do it per slot.

pub mod header;
pub mod pass;
pub mod report;
pub mod state;
pub mod table;

pub use pass::{Observation, ReadBack};
pub use report::{KvClass, KvVerifyReport};
pub use table::{KvStamper, KvTable, WriteOutcome};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::VerifyError;
use crate::study::plan::RunTarget;
use crate::targets::Prepared;

/// After a run's workers stopped: saves the table where `verify-state` says (`state_file`)
/// and reads the target back. A failure to save is a warning (pushed to `warnings`).
pub fn after_run(
    t: &RunTarget,
    prepared: &Prepared,
    table: &KvTable,
    state_file: Option<PathBuf>,
    warnings: &mut Vec<String>,
) -> Result<KvVerifyReport, VerifyError> {
    let Some(y) = t.workload.as_ycsb() else {
        return Err(VerifyError::Invalid(format!(
            "target `{}`: key-value verification needs a ycsb workload",
            t.name
        )));
    };
    if let Some(to) = &state_file
        && let Err(e) = state::save(table, &t.config, &y.properties, to)
    {
        warnings.push(format!("target `{}`: verify state not saved: {e}", t.name));
    }
    let mut r = pass::run(&t.config, prepared, &y.core, table)?;
    r.state_file = state_file.map(|p| p.display().to_string());
    Ok(r)
}

/// `storlab verify STATE` of a key-value state: prepares the target from the state and reads
/// every key back.
pub fn verify_state_file(state_path: &Path) -> Result<KvVerifyReport, VerifyError> {
    let loaded = state::load(state_path)?;
    let opts = crate::targets::PrepareOptions {
        writes: false,
        ycsb: Some(Arc::clone(&loaded.workload)),
        ..Default::default()
    };
    let prepared = loaded
        .config
        .prepare(&opts)
        .map_err(|e| VerifyError::Invalid(format!("target `{}`: {e}", loaded.meta.target)))?;
    let mut r = pass::run(&loaded.config, &prepared, &loaded.workload, &loaded.table)?;
    r.untracked_writes += loaded.meta.untracked_writes;
    r.state_file = Some(state_path.display().to_string());
    Ok(r)
}
