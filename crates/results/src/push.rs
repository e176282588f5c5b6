//! Uploading run folders into a store (`storlab results push FOLDER...`): each run's row, its
//! verify, event and recovery rows, and its files, keyed by its run id, so that pushing twice
//! leaves the same rows. For runs made while a shared store was down, or made elsewhere.

use std::path::{Path, PathBuf};

use crate::store::files::read_run_files;
use crate::store::{RunFiles, Store, StoreError};

/// The note a run folder holds when a shared store did not get its run (written by the
/// engine); a push that stores the run removes it.
pub const UNREACHABLE_NOTE_FILE: &str = "store-unreachable.txt";

/// What a push uploaded.
#[derive(Debug, Default)]
pub struct Pushed {
    /// Notes that a store did not get a run, removed now that it has it; and those that could
    /// not be removed, with why.
    pub notes_removed: usize,
    pub notes_left: Vec<String>,
    pub runs: usize,
    /// Run folders without a readable summary, stored `incomplete`.
    pub incomplete: usize,
    pub files: usize,
    pub bytes: u64,
}

/// The run folders FOLDER stands for: itself (a run folder), its `run-NNN` folders (a study
/// folder), or those of every study folder in it (a results folder).
fn run_folders(folder: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let io = |source| StoreError::Io {
        path: folder.to_path_buf(),
        source,
    };
    let is_run = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("run-"))
            && p.join("plan.json").exists()
    };
    if is_run(folder) {
        return Ok(vec![folder.to_path_buf()]);
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(io)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    let runs: Vec<PathBuf> = subs.iter().filter(|p| is_run(p)).cloned().collect();
    if !runs.is_empty() {
        return Ok(runs);
    }
    let mut all = Vec::new();
    for sub in subs.iter().filter(|p| p.join("plan.json").exists()) {
        all.extend(run_folders(sub)?);
    }
    Ok(all)
}

/// Pushes the runs of each folder into `store` (each a run, study or results folder).
pub fn push(store: &mut Store, folders: &[PathBuf]) -> Result<Pushed, StoreError> {
    let mut pushed = Pushed::default();
    for folder in folders {
        let folder = std::fs::canonicalize(folder).map_err(|source| StoreError::Io {
            path: folder.clone(),
            source,
        })?;
        let runs = run_folders(&folder)?;
        if runs.is_empty() {
            return Err(StoreError::Io {
                path: folder,
                source: std::io::Error::other(
                    "no run folder here (a run folder holds plan.json; a study folder, run-NNN folders)",
                ),
            });
        }
        for run in runs {
            let study = run.parent().unwrap_or(Path::new("/"));
            let plan: serde_json::Value = std::fs::read_to_string(study.join("plan.json"))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            let indexed = crate::reindex::index_run(store, study, &run, &plan, true)?;
            if indexed.complete {
                pushed.runs += 1;
            } else {
                pushed.incomplete += 1;
            }
            let files = read_run_files(&run)?;
            pushed.files += files.len();
            pushed.bytes += files.values().map(|b| b.len() as u64).sum::<u64>();
            // A shared store took them when the run was finished.
            if !(indexed.complete && store.is_shared()) {
                store.put_files(&indexed.run_id, &files)?;
            }
            let note = run.join(UNREACHABLE_NOTE_FILE);
            if note.exists() {
                match std::fs::remove_file(&note) {
                    Ok(()) => pushed.notes_removed += 1,
                    Err(e) => pushed.notes_left.push(format!("{}: {e}", note.display())),
                }
            }
        }
    }
    Ok(pushed)
}

/// After a study's own files (`raid.json`, `baseline.json`) are written at its end: a shared
/// store gets them with each run of the study folder that has a summary.
pub fn keep_study_files(store: &mut Store, study_folder: &Path) -> Result<(), StoreError> {
    if !store.is_shared() {
        return Ok(());
    }
    for run in run_folders(study_folder)? {
        let Ok(summary) = crate::stored::read_summary(&run) else {
            continue;
        };
        let study_files: RunFiles = read_run_files(&run)?
            .into_iter()
            .filter(|(name, _)| name.starts_with("study/"))
            .collect();
        if !study_files.is_empty() {
            store.put_files(&summary.run_id, &study_files)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A study folder with one run folder holding a summary, plan and timeline.
    fn study_folder() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let study = dir.path().join("s-20261127-000000.000-abcd");
        let run = study.join("run-001");
        std::fs::create_dir_all(&run).expect("mkdir");
        std::fs::write(study.join("plan.json"), "{\"study\": \"s\"}").expect("plan");
        std::fs::write(study.join("raid.json"), "{}").expect("raid");
        std::fs::write(run.join("plan.json"), "{\"index\": 1}").expect("plan");
        std::fs::write(run.join("timeline.csv"), "second\n").expect("timeline");
        let s = crate::fixtures::summary(1, "s", &[], &[("a", 10.0, 5)]);
        std::fs::write(
            run.join("summary.json"),
            serde_json::to_string(&s).expect("json"),
        )
        .expect("summary");
        (dir, study)
    }

    #[test]
    fn pushing_twice_leaves_one_row_and_the_same_files() {
        let (dir, study) = study_folder();
        let mut store = Store::open_file(&dir.path().join("other.db")).expect("store");
        for _ in 0..2 {
            let p = push(&mut store, std::slice::from_ref(&study)).expect("push");
            assert_eq!((p.runs, p.incomplete, p.files), (1, 0, 4));
        }
        let rows = store.list().expect("list");
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].status, "complete");
        let files = store.files(&rows[0].run_id).expect("files");
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "plan.json",
                "study/raid.json",
                "summary.json",
                "timeline.csv"
            ]
        );
        // A run folder alone and the results folder holding the study say the same.
        let run = study.join("run-001");
        assert_eq!(run_folders(&run).expect("run"), vec![run.clone()]);
        assert_eq!(run_folders(dir.path()).expect("results"), vec![run]);
    }

    #[test]
    fn a_folder_without_runs_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut store = Store::open_file(&dir.path().join("x.db")).expect("store");
        let e = push(&mut store, &[dir.path().to_path_buf()]).expect_err("no runs");
        assert!(e.to_string().contains("no run folder here"), "{e}");
    }
}
