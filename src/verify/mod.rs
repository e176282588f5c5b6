//! Verified writes (`verify = true` on a block workload, as fio's `verify=crc32c`): every
//! written block carries a [`header`] (magic, target id, offset, generation, block size and a
//! crc32c of the whole block); storlab keeps the last acknowledged generation of every block in
//! a preallocated [`table`] (no allocation, no lock per operation), and after the run a
//! [`pass`] reads every block whose generation is known and classifies it (intact, lost, torn,
//! misplaced, foreign) into a [`report`]. The table can be saved to a file and verified later
//! ([`state`], as fio's `verify_state_save`), after storlab or the machine died.
//!
//! Sessions use a [`Stamper`] (one per worker) to stamp each write and to record its
//! acknowledgement; they never time anything, and the pass is not part of any latency figure.

pub mod header;
pub mod pass;
pub mod report;
pub mod stamper;
pub mod state;
pub mod table;

pub use report::{VerifyClass, VerifyReport};
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

/// After a run's workers stopped: for each target with a table, saves it where
/// `verify-state` says and runs the verify pass, into the target's result. A failure to save
/// or to read back is a warning of the run (and no `verify` object), never silent.
pub fn after_run(
    run: &crate::study::plan::RunPlan,
    tables: &[Option<std::sync::Arc<VerifyTable>>],
    summary: &mut crate::results::summary::RunSummary,
) {
    let several = run.targets.len() > 1;
    for (t, table) in run.targets.iter().zip(tables) {
        let Some(table) = table else { continue };
        let Some((path, direct)) = t.config.verify_file() else {
            continue;
        };
        let state_file = t
            .workload
            .as_block()
            .and_then(|b| b.verify_state.clone())
            .map(|p| {
                if several {
                    let mut name = p.into_os_string();
                    name.push(format!(".{}", t.name));
                    PathBuf::from(name)
                } else {
                    p
                }
            });
        if let Some(to) = &state_file
            && let Err(e) = state::save(table, &path, direct, to)
        {
            summary
                .warnings
                .push(format!("target `{}`: verify state not saved: {e}", t.name));
        }
        let report = pass::open(&path, direct).and_then(|f| pass::run(table, &f));
        match report {
            Ok(mut r) => {
                r.state_file = state_file.map(|p| p.display().to_string());
                if r.damaged() > 0 {
                    summary.warnings.push(format!(
                        "target `{}`: verify found {} of {} blocks damaged (lost {}, torn {}, misplaced {}, foreign {}, unreadable {})",
                        t.name,
                        r.damaged(),
                        r.blocks_checked,
                        r.lost.blocks,
                        r.torn.blocks,
                        r.misplaced.blocks,
                        r.foreign.blocks,
                        r.unreadable.blocks
                    ));
                }
                if let Some(tr) = summary.targets.iter_mut().find(|x| x.name == t.name) {
                    tr.verify = Some(r);
                }
            }
            Err(e) => summary
                .warnings
                .push(format!("target `{}`: verify pass not run: {e}", t.name)),
        }
    }
}

/// `storlab verify STATE`: loads a saved table and reads its target back.
pub fn verify_state_file(state_path: &std::path::Path) -> Result<VerifyReport, VerifyError> {
    let (meta, table) = state::load(state_path)?;
    let file = pass::open(&meta.path, meta.direct)?;
    let mut r = pass::run(&table, &file)?;
    r.serialized_writes = meta.serialized_writes;
    r.state_file = Some(state_path.display().to_string());
    Ok(r)
}
