//! The state of the table of acknowledged generations, so that `storlab verify PATH` checks
//! the target later, after storlab or the machine died.
//!
//! A run keeps each table in a mapped file (see [`storlab_verify::mapped`]) from before its
//! first write: at `verify-state = "PATH"` when the workload gives it, else in the run's
//! folder (`verify-TARGET.vmap`). Its header holds the JSON of [`StateMeta`]; a side thread
//! ([`Syncer`]) syncs it once per interval and the end of a normal run marks it clean, so a
//! state that is not clean came from an interrupted run.
//!
//! The format of earlier versions, still read: a first line `storlab-verify-state 1`, a line
//! of JSON ([`StateMeta`]: the target, where it is, its region, block size, threads,
//! generation base and durable watermarks), then one little-endian u64 entry per block,
//! written at the end of a run ([`save`], still used for tables not kept in a file).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use storlab_model::Region;
use storlab_verify::VerifyError;
use storlab_verify::mapped;
use storlab_verify::table::{IN_FLIGHT, Storage, VerifyTable};

const FIRST_LINE: &str = "storlab-verify-state 1";

/// What a state file says besides its entries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StateMeta {
    pub target: String,
    pub target_id: u64,
    /// The file or device, and whether it was opened with O_DIRECT.
    pub path: PathBuf,
    pub direct: bool,
    pub region: Region,
    pub block_bytes: u32,
    pub threads: u32,
    pub generation_base: u64,
    pub durable: Vec<u64>,
    pub serialized_writes: u64,
    pub blocks: u64,
    /// When it was saved (RFC 3339).
    pub saved_at: String,
}

/// Saves `table` (of the target at `path`) to `to`.
pub fn save(table: &VerifyTable, path: &Path, direct: bool, to: &Path) -> Result<(), VerifyError> {
    let meta = StateMeta {
        target: table.target.clone(),
        target_id: table.target_id,
        path: storlab_targets::readback::stored_location(path),
        direct,
        region: table.region,
        block_bytes: table.block_bytes,
        threads: table.threads,
        generation_base: table.generation_base,
        durable: table.durable_all(),
        serialized_writes: table.serialized(),
        blocks: table.blocks() as u64,
        saved_at: storlab_model::units::rfc3339(std::time::SystemTime::now()),
    };
    let io = |what| move |e| VerifyError::io(to, what, e);
    if let Some(parent) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io("creating its folder"))?;
    }
    let tmp = to.with_extension("tmp");
    let file = std::fs::File::create(&tmp).map_err(io("creating"))?;
    let mut w = std::io::BufWriter::new(file);
    let json = serde_json::to_string(&meta).map_err(|e| VerifyError::Invalid(e.to_string()))?;
    writeln!(w, "{FIRST_LINE}\n{json}").map_err(io("writing"))?;
    for i in 0..table.blocks() {
        w.write_all(&(table.entry(i) & !IN_FLIGHT).to_le_bytes())
            .map_err(io("writing"))?;
    }
    let file = w.into_inner().map_err(|e| io("writing")(e.into_error()))?;
    file.sync_all().map_err(io("syncing"))?;
    std::fs::rename(&tmp, to).map_err(io("renaming into place"))?;
    Ok(())
}

/// Opens a state file of either kind: checks its first line, parses the JSON line after it, and
/// returns that with the reader positioned at the entries.
pub(crate) fn read_head<M: serde::de::DeserializeOwned>(
    from: &Path,
    first_line: &str,
) -> Result<(M, BufReader<std::fs::File>), VerifyError> {
    let bad = |why: String| VerifyError::BadState {
        path: from.to_path_buf(),
        why,
    };
    let file = std::fs::File::open(from).map_err(|e| VerifyError::io(from, "opening", e))?;
    let mut r = BufReader::new(file);
    let mut line = String::new();
    r.read_line(&mut line)
        .map_err(|e| VerifyError::io(from, "reading", e))?;
    if line.trim_end() != first_line {
        return Err(bad(format!("it does not start with `{first_line}`")));
    }
    line.clear();
    r.read_line(&mut line)
        .map_err(|e| VerifyError::io(from, "reading", e))?;
    let meta = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
    Ok((meta, r))
}

/// Where a loaded state came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origin {
    /// A mapped state whose run did not end normally (killed, crashed, or still running).
    pub interrupted: bool,
    /// When a mapped state was last synced (RFC 3339).
    pub last_sync: Option<String>,
}

/// Loads a state file of either format and what it says about its target.
pub fn load(from: &Path) -> Result<(StateMeta, VerifyTable, Origin), VerifyError> {
    let mut first = [0u8; mapped::FIRST_LINE.len()];
    let is_mapped = std::fs::File::open(from)
        .and_then(|mut f| f.read_exact(&mut first))
        .is_ok()
        && first == mapped::FIRST_LINE.as_bytes();
    if is_mapped {
        return load_mapped(from);
    }
    load_saved(from).map(|(m, t)| (m, t, Origin::default()))
}

fn load_mapped(from: &Path) -> Result<(StateMeta, VerifyTable, Origin), VerifyError> {
    let bad = |why: String| VerifyError::BadState {
        path: from.to_path_buf(),
        why,
    };
    let st = mapped::read(from)?;
    let mut meta: StateMeta =
        serde_json::from_str(&st.meta_json).map_err(|e| bad(e.to_string()))?;
    let proto = empty_table(&meta)?;
    if proto.blocks() != st.entries.len() || st.durable.len() != meta.threads as usize {
        return Err(bad("its counts do not match its region".into()));
    }
    meta.durable = st.durable.clone();
    meta.serialized_writes = st.serialized.iter().sum();
    let origin = Origin {
        interrupted: !st.clean,
        last_sync: (st.last_sync_ns > 0).then(|| mapped::ns_to_rfc3339(st.last_sync_ns)),
    };
    let table = VerifyTable::from_parts(proto, st.entries, st.durable, st.serialized);
    Ok((meta, table, origin))
}

/// An empty table of the target, region, block size and threads a state describes.
fn empty_table(meta: &StateMeta) -> Result<VerifyTable, VerifyError> {
    VerifyTable::with_base(
        &meta.target,
        meta.region,
        meta.block_bytes,
        meta.threads,
        meta.generation_base,
    )
}

/// Loads a table saved at the end of a run (the format of earlier versions).
fn load_saved(from: &Path) -> Result<(StateMeta, VerifyTable), VerifyError> {
    let bad = |why: String| VerifyError::BadState {
        path: from.to_path_buf(),
        why,
    };
    let (meta, mut r): (StateMeta, _) = read_head(from, FIRST_LINE)?;
    let proto = empty_table(&meta)?;
    if proto.blocks() as u64 != meta.blocks || meta.durable.len() != meta.threads as usize {
        return Err(bad("its counts do not match its region".into()));
    }
    let mut entries = Vec::with_capacity(proto.blocks());
    let mut b = [0u8; 8];
    for _ in 0..proto.blocks() {
        r.read_exact(&mut b)
            .map_err(|e| bad(format!("it ends early: {e}")))?;
        entries.push(u64::from_le_bytes(b));
    }
    let durable = meta.durable.clone();
    Ok((
        meta,
        VerifyTable::from_parts(proto, entries, durable, Vec::new()),
    ))
}

/// A table for a verified target of a run, kept in a mapped file at `at`: what its header
/// says is the target at `path` (O_DIRECT or not).
pub fn create_mapped(
    target: &str,
    region: Region,
    block_bytes: u32,
    threads: u32,
    (path, direct): (&Path, bool),
    at: &Path,
) -> Result<VerifyTable, VerifyError> {
    let generation_base = storlab_verify::table::generation_base_now();
    let meta = StateMeta {
        target: target.to_string(),
        target_id: storlab_model::seed::name_hash(target),
        path: storlab_targets::readback::stored_location(path),
        direct,
        region,
        block_bytes,
        threads,
        generation_base,
        durable: Vec::new(),
        serialized_writes: 0,
        blocks: VerifyTable::blocks_of(target, region, block_bytes, threads)?,
        saved_at: storlab_model::units::rfc3339(std::time::SystemTime::now()),
    };
    let meta_json =
        serde_json::to_string(&meta).map_err(|e| VerifyError::Invalid(e.to_string()))?;
    VerifyTable::with_storage(
        target,
        region,
        block_bytes,
        threads,
        generation_base,
        Storage::Mapped {
            path: at,
            meta_json: &meta_json,
        },
    )
}

/// Syncs the run's mapped tables once per interval on its own thread (never a worker's),
/// until dropped.
pub struct Syncer {
    stop: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    /// None when no table is mapped (or the thread cannot start: the tables are then synced
    /// only at the end, and by the kernel's writeback).
    pub fn start(
        tables: &[Option<std::sync::Arc<VerifyTable>>],
        interval: std::time::Duration,
    ) -> Option<Syncer> {
        let mapped: Vec<_> = tables
            .iter()
            .flatten()
            .filter(|t| t.mapped_file().is_some())
            .cloned()
            .collect();
        if mapped.is_empty() {
            return None;
        }
        let stop = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let stop2 = stop.clone();
        let interval = interval.max(std::time::Duration::from_millis(10));
        let thread = std::thread::Builder::new()
            .name("verify-sync".into())
            .spawn(move || {
                let (lock, cv) = &*stop2;
                let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                while !*stopped {
                    stopped = cv
                        .wait_timeout(stopped, interval)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    for m in mapped.iter().filter_map(|t| t.mapped_file()) {
                        // A failed sync leaves the kernel's writeback: the next one retries.
                        let _ = m.sync();
                    }
                }
            })
            .ok()?;
        Some(Syncer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_table_loads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let t = VerifyTable::with_base(
            "ssd",
            Region {
                offset_bytes: 8192,
                size_bytes: 10 * 4096,
            },
            4096,
            2,
            500,
        )
        .unwrap();
        t.begin_write(3);
        t.end_write(3, 777, true);
        t.begin_write(4);
        t.make_durable(1, 600);
        let to = dir.path().join("s/state");
        save(&t, Path::new("/tmp/x.dat"), true, &to).unwrap();
        let (meta, back, origin) = load(&to).unwrap();
        assert_eq!(origin, Origin::default());
        assert_eq!(meta.path, Path::new("/tmp/x.dat"));
        assert!(meta.direct);
        assert_eq!(back.target_id, t.target_id);
        assert_eq!(back.entry(3), 777);
        // A write still in flight when saved is not known to have landed.
        assert_eq!(back.entry(4), 0);
        assert_eq!(back.durable(1), 600);
        std::fs::write(&to, "garbage\n").unwrap();
        assert!(matches!(load(&to), Err(VerifyError::BadState { .. })));
    }

    /// A mapped table is its state file from the start: what a killed run left is read back
    /// (in-flight marks kept, interrupted), and a normal end marks it clean.
    #[test]
    fn a_mapped_table_reads_back_live_then_clean() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("s/f.vmap");
        let region = Region {
            offset_bytes: 4096,
            size_bytes: 600 * 4096,
        };
        let t = create_mapped(
            "ssd",
            region,
            4096,
            3,
            (Path::new("/tmp/x.dat"), false),
            &at,
        )
        .unwrap();
        t.begin_write(3);
        t.end_write(3, t.generation(0, 1), true);
        t.begin_write(599);
        t.make_durable(2, 42);
        t.count_serialized(1);
        let (meta, back, origin) = load(&at).unwrap();
        assert!(origin.interrupted);
        assert!(origin.last_sync.is_some());
        assert_eq!(meta.path, Path::new("/tmp/x.dat"));
        assert_eq!(meta.serialized_writes, 1);
        assert_eq!(back.generation_base, t.generation_base);
        assert_eq!(back.entry(3), t.generation(0, 1));
        assert!(back.in_flight(599));
        assert_eq!(back.durable(2), 42);
        t.mapped_file().unwrap().mark_clean().unwrap();
        let moved = dir.path().join("moved.vmap");
        t.mapped_file().unwrap().move_to(&moved).unwrap();
        t.end_write(599, t.generation(2, 1), true);
        let (_, back, origin) = load(&moved).unwrap();
        assert!(!origin.interrupted);
        assert_eq!(back.entry(599), t.generation(2, 1));
    }
}
