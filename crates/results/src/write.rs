//! Writing result files so that nothing is lost or replaced in silence: a study folder whose
//! name no other storlab process can have taken (made with `create_dir`, never reused), each
//! file written under a temporary name, synced and renamed into place, and a run's folder
//! synced before the store marks the run complete. Every failure names the file.

use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A run's per-second timeline (CSV) and its HDR interval log, streamed by the collector.
pub const TIMELINE_FILE: &str = "timeline.csv";
pub const HDR_LOG_FILE: &str = "histograms.hlog";
/// A study folder's copy of the published figures its study names.
pub const BASELINE_FILE: &str = "baseline.json";

/// A result file that could not be written, and why.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl WriteError {
    pub fn new(path: &Path, source: std::io::Error) -> WriteError {
        WriteError {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Four hex digits no other process draws alike: std's per-process random hash keys over the
/// pid, the clock and the attempt.
fn short_random(attempt: u32) -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u32(attempt);
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:04x}", h.finish() & 0xffff)
}

/// The study folder's name: the study, the time to the millisecond and a short random part,
/// e.g. `null-engine-20261127-112821.483-9f2c` (names sort by time).
pub fn study_folder_name(study: &str, started: SystemTime, attempt: u32) -> String {
    let millis = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    format!(
        "{}-{}.{millis:03}-{}",
        super::slug(study),
        super::timestamp_for_path(started),
        short_random(attempt)
    )
}

/// Creates a new study folder under `results_dir` (made if missing). The folder itself is
/// made with `create_dir`, so a name another process took first is never shared: a new
/// random part is drawn instead.
pub fn create_study_folder(results_dir: &Path, study: &str) -> Result<PathBuf, WriteError> {
    std::fs::create_dir_all(results_dir).map_err(|e| WriteError::new(results_dir, e))?;
    let started = SystemTime::now();
    let mut attempt = 0;
    loop {
        let path = results_dir.join(study_folder_name(study, started, attempt));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 64 => attempt += 1,
            Err(e) => return Err(WriteError::new(&path, e)),
        }
    }
}

/// Creates a folder that must not exist yet (a run's folder): an existing one is an error,
/// never reused.
pub fn create_new_dir(path: &Path) -> Result<(), WriteError> {
    std::fs::create_dir(path).map_err(|e| WriteError::new(path, e))
}

/// Writes `bytes` to `path` whole or not at all: to a temporary name beside it, synced, then
/// renamed into place. On failure the temporary file is removed and `path` is untouched.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(WriteError::new(path, e));
    }
    Ok(())
}

/// Syncs every file in `folder` and the folder itself, so that what is there survives a
/// power loss before the store calls the run complete.
pub fn sync_folder(folder: &Path) -> Result<(), WriteError> {
    let entries = std::fs::read_dir(folder).map_err(|e| WriteError::new(folder, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| WriteError::new(folder, e))?;
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(|e| WriteError::new(&path, e))?;
        }
    }
    std::fs::File::open(folder)
        .and_then(|f| f.sync_all())
        .map_err(|e| WriteError::new(folder, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_study_folder_is_never_shared() {
        let dir = tempfile::tempdir().expect("tmp");
        let folders: Vec<PathBuf> = (0..50)
            .map(|_| create_study_folder(dir.path(), "s").expect("create"))
            .collect();
        let unique: std::collections::BTreeSet<_> = folders.iter().collect();
        assert_eq!(unique.len(), 50, "{folders:?}");
        let name = folders[0]
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name");
        // s-YYYYMMDD-HHMMSS.mmm-xxxx
        assert_eq!(name.len(), "s-20261127-112821.483-9f2c".len(), "{name}");
        assert!(
            create_new_dir(&folders[0]).is_err(),
            "an existing folder is reused"
        );
    }

    #[test]
    fn a_failed_write_names_the_file_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("summary.json");
        write_file(&path, b"one").expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"one");
        let missing = dir.path().join("gone").join("summary.json");
        let e = write_file(&missing, b"two").expect_err("no folder");
        assert!(e.to_string().contains("gone/summary.json"), "{e}");
        write_file(&path, b"two").expect("rewrite");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("summary.json")]);
        sync_folder(dir.path()).expect("sync");
    }
}
