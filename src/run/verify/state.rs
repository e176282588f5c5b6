//! Saving the table of acknowledged generations (`verify-state = "PATH"`, as fio's
//! `verify_state_save`), so that `storlab verify PATH` checks the target later, after storlab
//! or the machine died. The file: a first line `storlab-verify-state 1`, a line of JSON
//! ([`StateMeta`]: the target, where it is, its region, block size, threads, generation base
//! and durable watermarks), then one little-endian u64 entry per block. It is written to a
//! temporary file, synced and renamed, so a crash never leaves half a state.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::Region;
use crate::verify::VerifyError;
use crate::verify::table::{IN_FLIGHT, VerifyTable};

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
        path: crate::targets::readback::stored_location(path),
        direct,
        region: table.region,
        block_bytes: table.block_bytes,
        threads: table.threads,
        generation_base: table.generation_base,
        durable: table.durable_all(),
        serialized_writes: table.serialized(),
        blocks: table.blocks() as u64,
        saved_at: crate::units::rfc3339(std::time::SystemTime::now()),
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

/// Loads a saved table and what it says about its target.
pub fn load(from: &Path) -> Result<(StateMeta, VerifyTable), VerifyError> {
    let bad = |why: String| VerifyError::BadState {
        path: from.to_path_buf(),
        why,
    };
    let (meta, mut r): (StateMeta, _) = read_head(from, FIRST_LINE)?;
    let proto = VerifyTable::with_base(
        &meta.target,
        meta.region,
        meta.block_bytes,
        meta.threads,
        meta.generation_base,
    )?;
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
    Ok((meta, VerifyTable::from_parts(proto, entries, durable)))
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
        let (meta, back) = load(&to).unwrap();
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
}
