//! Rebuilding the results index (`results.db`) from the run folders, which are the truth: a
//! run's `summary.json` gives its row, its events, recovery and verify rows; a run folder
//! without one is listed `incomplete`. The new index is built beside the old one and renamed
//! over it; an old index is kept as `results.db.replaced-TIME` (with its journal files),
//! never deleted. Run it while no storlab writes to the folder.

use std::path::{Path, PathBuf};

use super::store::{NewRun, STORE_FILE, Store, StoreError};
use super::summary::RunSummary;

/// What a reindex found.
#[derive(Debug, Default)]
pub struct Reindexed {
    pub studies: usize,
    pub runs: usize,
    /// Run folders without a readable summary, listed `incomplete`.
    pub incomplete: usize,
    /// Where the old index went.
    pub old_index: Option<PathBuf>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Sorted sub-folders of `dir` whose name passes `keep`.
fn folders(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>, StoreError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && keep(&name) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Rebuilds `dir/results.db` from the study folders in `dir`.
pub fn reindex(dir: &Path) -> Result<Reindexed, StoreError> {
    let stamp = storlab_model::units::timestamp_for_path(std::time::SystemTime::now());
    let new_path = dir.join(format!("{STORE_FILE}.reindex-{}", std::process::id()));
    let mut found = Reindexed::default();
    {
        let mut store = Store::open_file(&new_path)?;
        for study in folders(dir, |_| true)? {
            let Ok(plan_text) = std::fs::read_to_string(study.join("plan.json")) else {
                continue; // not a study folder
            };
            let plan: serde_json::Value = serde_json::from_str(&plan_text).unwrap_or_default();
            found.studies += 1;
            for run in folders(&study, |n| n.starts_with("run-"))? {
                if index_run(&mut store, &study, &run, &plan, false)?.complete {
                    found.runs += 1;
                } else {
                    found.incomplete += 1;
                }
            }
        }
    } // closed: its journal is written back into the file
    let old = dir.join(STORE_FILE);
    if old.exists() {
        let kept = dir.join(format!("{STORE_FILE}.replaced-{stamp}"));
        for suffix in ["", "-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", old.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", kept.display()));
                std::fs::rename(&from, &to).map_err(io(&from))?;
            }
        }
        found.old_index = Some(kept);
    }
    std::fs::rename(&new_path, &old).map_err(io(&new_path))?;
    Ok(found)
}

/// A run folder as indexed: its run id, and whether it had a readable summary (else it is
/// listed `incomplete`).
pub struct Indexed {
    pub run_id: String,
    pub complete: bool,
}

/// Adds one run folder of the study folder `study` (whose plan is `plan`); `replace`: its row
/// is made anew when its run id is there already (a push), else that is an error.
pub fn index_run(
    store: &mut Store,
    study: &Path,
    run: &Path,
    plan: &serde_json::Value,
    replace: bool,
) -> Result<Indexed, StoreError> {
    let folder_name = study.file_name().unwrap_or_default().to_string_lossy();
    let summary: Option<RunSummary> = std::fs::read_to_string(run.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    if let Some(s) = summary {
        let parameters: Vec<String> = s
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let new = NewRun {
            run_id: &s.run_id,
            study: &s.study,
            step: &s.step,
            run_index: s.run_index,
            run_count: s.run_count,
            repetition: s.repetition,
            parameters: &parameters.join(" "),
            started_at: &s.started_at,
            folder: run,
            pid: 0,
        };
        insert(store, &new, replace)?;
        store.finish_run(&s.run_id, &s)?;
        return Ok(Indexed {
            run_id: s.run_id.clone(),
            complete: true,
        });
    }
    // No summary: what the run's plan and the study's plan say.
    let run_plan: serde_json::Value = std::fs::read_to_string(run.join("plan.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let index = run_plan["index"].as_u64().unwrap_or_else(|| {
        let name = run.file_name().unwrap_or_default().to_string_lossy();
        name.trim_start_matches("run-").parse().unwrap_or(0)
    }) as usize;
    let parameters: Vec<String> = run_plan["parameters"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(&v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let modified = std::fs::metadata(run)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    let run_id = format!("{folder_name}-r{index:03}");
    let new = NewRun {
        run_id: &run_id,
        study: plan["study"].as_str().unwrap_or(&folder_name),
        step: run_plan["step"].as_str().unwrap_or("?"),
        run_index: index,
        run_count: plan["runs"].as_array().map(|r| r.len()).unwrap_or(0),
        repetition: run_plan["repetition"].as_u64().unwrap_or(1) as u32,
        parameters: &parameters.join(" "),
        started_at: &storlab_model::units::rfc3339(modified),
        folder: run,
        pid: 0,
    };
    insert(store, &new, replace)?;
    store.mark_incomplete(
        run,
        "no readable summary.json in its folder (found by `storlab results reindex`; \
         started-at is the folder's time)",
    )?;
    Ok(Indexed {
        run_id,
        complete: false,
    })
}

fn insert(store: &mut Store, new: &NewRun, replace: bool) -> Result<(), StoreError> {
    if replace {
        store.upsert_run(new)
    } else {
        store.insert_run(new)
    }
}
