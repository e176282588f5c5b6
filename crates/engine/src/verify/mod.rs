//! The verify passes that run after a run's workers stopped (they open a session of the
//! target, or read its file or device back) and the state files that let `storlab verify`
//! check a target later. What they check against, the tables, stamps and ledgers that the
//! sessions fill during the run, is in [`storlab_verify`], below the targets.

pub mod kv;
pub mod kv_pass;
pub mod kv_state;
pub mod pass;
pub mod state;

use std::path::PathBuf;

use storlab_verify::kv::KvTable;
use storlab_verify::ledger;
use storlab_verify::{Verified, VerifyError, VerifyReport, VerifyTable};

/// Per target of the run: the table of acknowledged writes of a `ycsb` workload with
/// `verify = true`, sized to the keys it can reach, allocated before any worker starts.
pub fn kv_tables(
    run: &storlab_study::plan::RunPlan,
) -> Result<Vec<Option<std::sync::Arc<KvTable>>>, (String, VerifyError)> {
    run.targets
        .iter()
        .map(|t| match t.workload.as_ycsb() {
            Some(y) if y.verify => {
                let keys = y.verify_keys(run.ops).ok_or_else(|| {
                    (
                        t.name.clone(),
                        VerifyError::Invalid(
                            "the run's inserts are not bounded (give operation-count or ops), so the table of keys cannot be sized".into(),
                        ),
                    )
                })?;
                KvTable::new(&t.name, keys)
                    .map(|table| Some(std::sync::Arc::new(table)))
                    .map_err(|e| (t.name.clone(), e))
            }
            _ => Ok(None),
        })
        .collect()
}

/// `verify-state` of a target: the path, or `PATH.TARGET` when the run has several targets.
pub(crate) fn state_file(
    t: &storlab_study::plan::RunTarget,
    several: bool,
    path: Option<&std::path::Path>,
) -> Option<PathBuf> {
    path.map(|p| {
        if several {
            let mut name = p.as_os_str().to_os_string();
            name.push(format!(".{}", t.name));
            PathBuf::from(name)
        } else {
            p.to_path_buf()
        }
    })
}

/// Counts a pass's damage as a warning of the run and puts its report in the target's result.
fn record(
    summary: &mut storlab_results::summary::RunSummary,
    name: &str,
    r: Verified,
    warning: Option<String>,
) {
    if let Some(w) = warning {
        summary.warnings.push(w);
    }
    if let Some(tr) = summary.targets.iter_mut().find(|x| x.name == name) {
        tr.verify = Some(r);
    }
}

/// After a run's workers stopped, before the processes of the step's events stop: reads back
/// every key-value target with a table (see [`kv::after_run`]), into the target's result. A
/// failure is a warning of the run (and no `verify` object), never silent.
pub fn after_run_kv(
    run: &storlab_study::plan::RunPlan,
    tables: &[Option<std::sync::Arc<KvTable>>],
    prepared: &[storlab_targets::Prepared],
    summary: &mut storlab_results::summary::RunSummary,
) {
    let several = run.targets.len() > 1;
    for ((t, table), p) in run.targets.iter().zip(tables).zip(prepared) {
        let Some(table) = table else { continue };
        let _netns = match storlab_targets::netns::enter(t.netns.as_deref()) {
            Ok(entered) => entered,
            Err(e) => {
                summary
                    .warnings
                    .push(format!("target `{}`: verify not run: {e}", t.name));
                continue;
            }
        };
        let path = t.workload.as_ycsb().and_then(|y| y.verify_state.as_deref());
        let to = state_file(t, several, path);
        let mut warnings = Vec::new();
        let report = kv::after_run(t, p, table, to, &mut warnings);
        summary.warnings.extend(warnings);
        match report {
            Ok(mut r) => {
                r.expected = t
                    .workload
                    .as_ycsb()
                    .map(|y| y.verify_expect.clone())
                    .unwrap_or_default();
                let warning = (r.damaged() > 0).then(|| {
                    format!(
                        "target `{}`: verify found {} of {} keys damaged (lost {}, missing {}, corrupt {}, unreadable {})",
                        t.name,
                        r.damaged(),
                        r.keys_checked,
                        r.lost.keys,
                        r.missing.keys,
                        r.corrupt.keys,
                        r.unreadable.keys
                    )
                });
                let untracked = (r.untracked_writes > 0).then(|| {
                    format!(
                        "target `{}`: {} verified writes were not tracked (not checked)",
                        t.name, r.untracked_writes
                    )
                });
                summary.warnings.extend(untracked);
                record(summary, &t.name, Verified::KeyValue(r), warning);
            }
            Err(e) => summary
                .warnings
                .push(format!("target `{}`: verify pass not run: {e}", t.name)),
        }
    }
}

/// After a run's workers stopped, beside [`after_run_kv`]: checks the lost-transaction ledger
/// of every pgbench target that kept one (see [`ledger`]) into the target's result, as a
/// key-value report whose keys are transactions. A failure is a warning of the run.
pub fn after_run_ledgers(
    run: &storlab_study::plan::RunPlan,
    ledgers: &[Option<std::sync::Arc<ledger::Ledger>>],
    prepared: &[storlab_targets::Prepared],
    summary: &mut storlab_results::summary::RunSummary,
) {
    for ((t, l), p) in run.targets.iter().zip(ledgers).zip(prepared) {
        let Some(l) = l else { continue };
        let started = std::time::Instant::now();
        match t.config.check_ledger(p, l) {
            Ok(mut r) => {
                r.seconds = started.elapsed().as_secs_f64();
                r.rate_keys = r.keys_checked as f64 / r.seconds.max(1e-9);
                let warning = (r.damaged() > 0).then(|| {
                    format!(
                        "target `{}`: the ledger found {} of {} acknowledged transactions lost (history rows missing: {}, duplicated: {})",
                        t.name,
                        r.damaged(),
                        r.keys_checked,
                        r.missing.keys,
                        r.corrupt.keys
                    )
                });
                if r.untracked_writes > 0 {
                    summary.warnings.push(format!(
                        "target `{}`: {} transactions after too many failures were not tracked (not checked)",
                        t.name, r.untracked_writes
                    ));
                }
                record(summary, &t.name, Verified::KeyValue(r), warning);
            }
            Err(e) => summary
                .warnings
                .push(format!("target `{}`: ledger check not run: {e}", t.name)),
        }
    }
}

/// Where the mapped table of target `t` is made before the run: at its `verify-state`, else
/// in the study's folder, moved into the run's folder by [`move_into_run_folder`] once that
/// exists.
pub fn map_path(
    run: &storlab_study::plan::RunPlan,
    t: &storlab_study::plan::RunTarget,
    study_folder: &std::path::Path,
) -> PathBuf {
    let given = t
        .workload
        .as_block()
        .and_then(|b| b.verify_state.as_deref());
    state_file(t, run.targets.len() > 1, given)
        .unwrap_or_else(|| study_folder.join(format!(".verify-r{:03}-{}.vmap", run.index, t.name)))
}

/// Moves the mapped tables made in the study's folder (no `verify-state`) into the run's
/// folder as `verify-TARGET.vmap`. A failure is a warning: the table stays where it was.
pub fn move_into_run_folder(
    run: &storlab_study::plan::RunPlan,
    tables: &[Option<std::sync::Arc<VerifyTable>>],
    run_folder: &std::path::Path,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (t, table) in run.targets.iter().zip(tables) {
        let given = t.workload.as_block().and_then(|b| b.verify_state.as_ref());
        let Some(m) = table.as_ref().and_then(|x| x.mapped_file()) else {
            continue;
        };
        if given.is_none()
            && let Err(e) = m.move_to(&run_folder.join(format!("verify-{}.vmap", t.name)))
        {
            warnings.push(format!(
                "target `{}`: verify state left at {}: {e}",
                t.name,
                m.path().display()
            ));
        }
    }
    warnings
}

/// After a run's workers stopped: for each target with a table, marks its mapped state clean
/// (or, on the heap, saves it where `verify-state` says) and runs the verify pass, into the target's result.
/// `crashed`: a crash came before the pass ([`crate::events::crash_before`]); without one, a
/// write lost before its sync is `lost-while-up`. A failure to save
/// or to read back is a warning of the run (and no `verify` object), never silent.
pub fn after_run(
    run: &storlab_study::plan::RunPlan,
    tables: &[Option<std::sync::Arc<VerifyTable>>],
    crashed: bool,
    summary: &mut storlab_results::summary::RunSummary,
) {
    let several = run.targets.len() > 1;
    for (t, table) in run.targets.iter().zip(tables) {
        let Some(table) = table else { continue };
        let Some(storlab_targets::ReadBackFile { path, direct }) = t.config.verify_file() else {
            continue;
        };
        // A client's target is read back from its client's network namespace.
        let _netns = match storlab_targets::netns::enter(t.netns.as_deref()) {
            Ok(entered) => entered,
            Err(e) => {
                summary
                    .warnings
                    .push(format!("target `{}`: verify not run: {e}", t.name));
                continue;
            }
        };
        let state_file = match table.mapped_file() {
            // Kept in a mapped file all along: the run ended normally.
            Some(m) => {
                if let Err(e) = m.mark_clean() {
                    summary.warnings.push(format!(
                        "target `{}`: verify state not marked clean: {e}",
                        t.name
                    ));
                }
                Some(m.path())
            }
            None => state_file(
                t,
                several,
                t.workload
                    .as_block()
                    .and_then(|b| b.verify_state.as_deref()),
            ),
        };
        if table.mapped_file().is_none()
            && let Some(to) = &state_file
            && let Err(e) = state::save(table, &path, direct, to)
        {
            summary
                .warnings
                .push(format!("target `{}`: verify state not saved: {e}", t.name));
        }
        let report = pass::open(&path, direct).and_then(|f| pass::run(table, &f, crashed));
        match report {
            Ok(mut r) => {
                r.state_file = state_file.map(|p| p.display().to_string());
                if !crashed {
                    r.no_crash_before();
                }
                r.expected = t
                    .workload
                    .as_block()
                    .map(|b| b.verify_expect.clone())
                    .unwrap_or_default();
                let warning = (r.damaged() > 0).then(|| {
                    format!(
                        "target `{}`: verify found {} of {} blocks damaged (lost {}, torn {}, misplaced {}, foreign {}, unreadable {})",
                        t.name,
                        r.damaged(),
                        r.blocks_checked,
                        r.lost.blocks,
                        r.torn.blocks,
                        r.misplaced.blocks,
                        r.foreign.blocks,
                        r.unreadable.blocks
                    )
                });
                record(summary, &t.name, Verified::Block(r), warning);
            }
            Err(e) => summary
                .warnings
                .push(format!("target `{}`: verify pass not run: {e}", t.name)),
        }
    }
}

/// `storlab verify STATE`: loads a saved table (of blocks or keys) and reads its target back.
pub fn verify_state_file(state_path: &std::path::Path) -> Result<Verified, VerifyError> {
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(
            std::fs::File::open(state_path)
                .map_err(|e| VerifyError::io(state_path, "opening", e))?,
        ),
        &mut first,
    )
    .map_err(|e| VerifyError::io(state_path, "reading", e))?;
    if first.trim_end() == kv_state::FIRST_LINE {
        return kv::verify_state_file(state_path).map(Verified::KeyValue);
    }
    verify_block_state_file(state_path).map(Verified::Block)
}

fn verify_block_state_file(state_path: &std::path::Path) -> Result<VerifyReport, VerifyError> {
    let (meta, table, origin) = state::load(state_path)?;
    let file = pass::open(&meta.path, meta.direct)?;
    // After the fact, whether the machine crashed is not known: a block with no header stays
    // `foreign` (older generations lost before their sync are `lost-unsynced`, as always).
    let mut r = pass::run(&table, &file, false)?;
    r.serialized_writes = meta.serialized_writes;
    r.interrupted = origin.interrupted;
    r.state_last_sync = origin.last_sync;
    r.state_file = Some(state_path.display().to_string());
    Ok(r)
}
