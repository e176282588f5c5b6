//! Results: each run's folder (the study as given, the resolved plan, the system capture, the
//! summary JSON, the per-second timeline CSV, the HDR interval log and the series its `sample`
//! events read) and the SQLite results
//! store that indexes every run; reading them back (`stored`, `timeline`, `histograms`) and
//! the one comparison of runs that every report and `storlab compare` shows. Reports read from
//! here only; nothing here knows of the reports.

pub mod comparison;
pub mod distributed;
pub mod events;
pub mod export;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod histograms;
pub mod phases;
pub mod push;
pub mod raid;
pub mod recovery;
pub mod redact;
pub mod reindex;
pub mod samples;
pub mod schedule;
pub mod steady;
pub mod store;
pub mod stored;
pub mod summarize;
pub mod summary;
pub mod system;
pub mod timeline;
pub mod write;

pub use redact::redact;

use std::path::{Path, PathBuf};

use storlab_study::plan::{Plan, RunPlan};
use write::WriteError;

use storlab_model::units::{rfc3339, timestamp_for_path};

/// A name made safe for a folder: letters, digits, `-`, `_` and `.` only.
pub fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() { "study".into() } else { s }
}

/// Writes the study-level files into the study's new folder: the study as given and the
/// whole plan.
pub fn write_study_files(folder: &Path, plan: &Plan) -> Result<(), WriteError> {
    write::write_file(
        &folder.join("study.toml"),
        redact(&plan.source_text).as_bytes(),
    )?;
    write_json_file(&folder.join("plan.json"), plan)
}

/// Writes `value` as JSON to `path`, whole or not at all (see [`write::write_file`]); never
/// a credential.
pub fn write_json_file<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| WriteError::new(path, std::io::Error::other(e)))?;
    write::write_file(path, (redact(&text) + "\n").as_bytes())
}

/// One run's folder.
pub struct RunFolder {
    pub path: PathBuf,
}

impl RunFolder {
    /// Creates `run-NNN` under the study folder (it must not exist yet: a run's folder is
    /// never reused) with the study file and this run's plan.
    pub fn create(
        study_folder: &Path,
        run: &RunPlan,
        plan: &Plan,
    ) -> Result<RunFolder, WriteError> {
        let path = study_folder.join(format!("run-{:03}", run.index));
        write::create_new_dir(&path)?;
        write::write_file(
            &path.join("study.toml"),
            redact(&plan.source_text).as_bytes(),
        )?;
        write_json_file(&path.join("plan.json"), run)?;
        Ok(RunFolder { path })
    }

    pub fn write_json<T: serde::Serialize>(&self, name: &str, value: &T) -> Result<(), WriteError> {
        write_json_file(&self.path.join(name), value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_for_paths() {
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(timestamp_for_path(t), "20231114-221320");
        assert_eq!(slug("my study/1"), "my-study-1");
    }
}
