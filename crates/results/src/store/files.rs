//! The files of a run folder (and of its study folder) that a shared store keeps beside a
//! run's rows, read as they were written.

use std::path::Path;

use super::{RunFiles, StoreError};

/// A run folder's files a store keeps, as written there.
pub const RUN_FILE_NAMES: [&str; 7] = [
    "summary.json",
    "plan.json",
    "system.json",
    "study.toml",
    crate::write::TIMELINE_FILE,
    crate::write::HDR_LOG_FILE,
    crate::samples::SAMPLES_FILE,
];

/// The study folder's files a report reads beside its runs', kept as `study/NAME`.
pub const STUDY_FILE_NAMES: [&str; 2] = ["raid.json", crate::write::BASELINE_FILE];

/// The samples of the run folder `folder` (`samples.csv`); None when it has no such file (its
/// step had no `sample` event).
pub fn read_samples(folder: &Path) -> Result<Option<Vec<crate::samples::Sample>>, StoreError> {
    let path = folder.join(crate::samples::SAMPLES_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(crate::samples::parse_samples(&text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StoreError::Io { path, source }),
    }
}

/// The files of a run folder (and of its study folder) a store keeps; those not there are
/// left out.
pub fn read_run_files(folder: &Path) -> Result<RunFiles, StoreError> {
    let mut files = RunFiles::new();
    let study = folder.parent();
    let run_files = RUN_FILE_NAMES
        .iter()
        .map(|n| (n.to_string(), folder.join(n)));
    let study_files = STUDY_FILE_NAMES
        .iter()
        .filter_map(|n| Some((format!("study/{n}"), study?.join(n))));
    for (name, path) in run_files.chain(study_files) {
        match std::fs::read(&path) {
            Ok(bytes) => {
                files.insert(name, bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(StoreError::Io { path, source }),
        }
    }
    Ok(files)
}
