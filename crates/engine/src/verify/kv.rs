//! The key-value verify pass and its saved state, run after a run's workers stopped
//! ([`after_run`]) or later from a state file ([`verify_state_file`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{kv_pass as pass, kv_state as state};
use storlab_study::plan::RunTarget;
use storlab_targets::Prepared;
use storlab_verify::VerifyError;
use storlab_verify::kv::{KvTable, KvVerifyReport};

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
    let opts = storlab_targets::PrepareOptions {
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
