//! The results store as a study writes to it. Run folders are the truth: a shared store
//! (PostgreSQL) that cannot be reached, at the start or in the middle of a study, never stops
//! it nor loses a measurement: the runs go on into their folders, each of them records that
//! the store did not get it (`store-unreachable.txt`), and the study ends saying so and how to
//! upload them later (`storlab results push`). Any other store error stops the study as before
//! (an SQLite store on a full disk marks the run `incomplete`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use storlab_results::store::{Store, StoreError, StoreLocation};
use storlab_results::summary::RunSummary;
use storlab_study::plan::RunPlan;

/// The note a run folder holds when the store did not get its run.
pub use storlab_results::push::UNREACHABLE_NOTE_FILE;

/// The store a study writes to, or why it stopped writing to it.
pub(crate) struct Recording {
    store: Option<Store>,
    location: StoreLocation,
    /// Why the store could not be reached, once it could not.
    unreachable: Option<String>,
    /// The folder of each run begun, by run id (to leave the note in).
    folders: Vec<(String, PathBuf)>,
}

impl Recording {
    /// Opens the store at `location`; a shared store that cannot be reached is recorded, not
    /// an error.
    pub(crate) fn open(location: &StoreLocation) -> Result<Recording, StoreError> {
        let (store, unreachable) = match Store::open_location(location) {
            Ok(s) => (Some(s), None),
            Err(e) if e.is_unreachable() => (None, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        Ok(Recording {
            store,
            location: location.clone(),
            unreachable,
            folders: Vec::new(),
        })
    }

    /// Why the store could not be reached (with what to do), if it could not.
    pub(crate) fn unreachable(&self) -> Option<&str> {
        self.unreachable.as_deref()
    }

    /// Runs `write` on the store; an unreachable store is recorded (and not written to
    /// again in this study) and `folder`, when given, gets the note.
    fn write(
        &mut self,
        folder: Option<&Path>,
        write: impl FnOnce(&mut Store) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if let Some(store) = &mut self.store {
            match write(store) {
                Err(e) if e.is_unreachable() => {
                    self.unreachable = Some(e.to_string());
                    self.store = None;
                }
                other => return other,
            }
        }
        if let Some(folder) = folder {
            self.leave_note(folder);
        }
        Ok(())
    }

    /// Writes the note into a run folder (when it exists): the store, why, and the command
    /// that uploads the run later. Best effort: the run's results are in its folder.
    fn leave_note(&self, folder: &Path) {
        if !folder.is_dir() {
            return;
        }
        let why = self.unreachable.as_deref().unwrap_or("unknown");
        let text = format!(
            "This run is not in the results store {}: {why}\n\
             Its results are all in this folder. Upload it with (the password from PGPASSWORD\n\
             or ~/.pgpass, as libpq takes it; the push removes this note):\n  \
             storlab results push {} --store '{}'\n",
            self.location,
            folder.display(),
            self.location.for_command()
        );
        let _ = storlab_results::write::write_file(
            &folder.join(UNREACHABLE_NOTE_FILE),
            storlab_results::redact(&text).as_bytes(),
        );
    }

    fn folder_of(&self, run_id: &str) -> Option<PathBuf> {
        self.folders
            .iter()
            .find(|(id, _)| id == run_id)
            .map(|(_, f)| f.clone())
    }

    /// [`Store::begin_run`]; the folder is remembered for the note.
    pub(crate) fn begin_run(
        &mut self,
        run_id: &str,
        study: &str,
        run: &RunPlan,
        run_count: usize,
        folder: &Path,
        started: SystemTime,
    ) -> Result<(), StoreError> {
        self.folders
            .push((run_id.to_string(), folder.to_path_buf()));
        // Its folder is made after: the note is left when the run finishes.
        self.write(None, |s| {
            s.begin_run(run_id, study, run, run_count, folder, started)
        })
    }

    /// [`Store::finish_run`].
    pub(crate) fn finish_run(
        &mut self,
        run_id: &str,
        summary: &RunSummary,
    ) -> Result<(), StoreError> {
        let folder = self.folder_of(run_id);
        self.write(folder.as_deref(), |s| s.finish_run(run_id, summary))
    }

    /// [`Store::mark_incomplete`].
    pub(crate) fn mark_incomplete(&mut self, folder: &Path, note: &str) -> Result<(), StoreError> {
        self.write(Some(folder), |s| s.mark_incomplete(folder, note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_store_leaves_a_note_in_the_run_folder_and_is_not_an_error() {
        // A port nothing listens on (the loopback refuses at once).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let url = format!("postgres://lab:s3cret@127.0.0.1:{port}/results");
        let location = StoreLocation::parse(&url).expect("url");
        let mut recording = Recording::open(&location).expect("not an error");
        let why = recording.unreachable().expect("unreachable").to_string();
        assert!(why.contains("cannot be reached"), "{why}");
        assert!(!why.contains("s3cret"), "{why}");
        let dir = tempfile::tempdir().expect("tmp");
        let folder = dir.path().join("run-001");
        std::fs::create_dir(&folder).expect("mkdir");
        recording.folders.push(("r1".into(), folder.clone()));
        let summary = storlab_results::fixtures::summary(1, "s", &[], &[]);
        recording.finish_run("r1", &summary).expect("kept");
        let note = std::fs::read_to_string(folder.join(UNREACHABLE_NOTE_FILE)).expect("note");
        assert!(note.contains("storlab results push"), "{note}");
        assert!(
            note.contains(&format!("127.0.0.1:{port}/results")),
            "{note}"
        );
        assert!(!note.contains("s3cret"), "{note}");
    }
}
