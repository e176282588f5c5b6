//! Saving the table of a key-value workload (`verify-state = "PATH"`), so that `storlab
//! verify PATH` reads the target back later, after storlab, the server or the machine died.
//! The file: a first line `storlab-kv-verify-state 1`, a line of JSON ([`KvStateMeta`]: the
//! target's type and options, as the study gave them, the YCSB properties that name its
//! records, the generation base), then per key three little-endian u32 (acknowledged sequence,
//! floor, failed). Written to a temporary file, synced and renamed.
//!
//! The state holds no secret: a target's password (Redis `password`, a PostgreSQL URL's) is
//! not saved, so a target that needs one cannot be verified from the state (its connection is
//! refused with the server's error).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use storlab_targets::TargetConfig;
use storlab_verify::VerifyError;
use storlab_verify::kv::table::{KeyState, KvTable};
use storlab_workload::ycsb::{CoreWorkload, Origin, Properties};

pub const FIRST_LINE: &str = "storlab-kv-verify-state 1";

/// What a key-value state file says besides its entries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KvStateMeta {
    pub target: String,
    pub target_type: String,
    /// The target's options (without secrets).
    pub target_options: serde_json::Value,
    /// The YCSB workload's properties (key names, fields, lengths).
    pub ycsb_properties: BTreeMap<String, String>,
    pub generation_base: u64,
    pub keys: u64,
    pub untracked_writes: u64,
    /// When it was saved (RFC 3339).
    pub saved_at: String,
}

/// Saves `table` of target `config` running a YCSB workload of `properties` to `to`.
pub fn save(
    table: &KvTable,
    config: &TargetConfig,
    properties: &BTreeMap<String, String>,
    to: &Path,
) -> Result<(), VerifyError> {
    let mut options =
        serde_json::to_value(config).map_err(|e| VerifyError::Invalid(e.to_string()))?;
    if let Some(o) = options.as_object_mut() {
        o.remove("type");
        // A relative `path` (an embedded database's directory) is kept absolute, so that
        // `storlab verify` finds it from any directory.
        if let Some(serde_json::Value::String(p)) = o.get_mut("path")
            && let Ok(abs) = std::path::absolute(&*p)
        {
            *p = abs.display().to_string();
        }
    }
    let meta = KvStateMeta {
        target: table.target.clone(),
        target_type: config.type_name().to_string(),
        target_options: options,
        ycsb_properties: properties.clone(),
        generation_base: table.generation_base,
        keys: table.keys(),
        untracked_writes: table.untracked_writes(),
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
    for k in 0..table.keys() {
        let s = table.state(k);
        for v in [s.acked, s.floor, s.failed] {
            w.write_all(&v.to_le_bytes()).map_err(io("writing"))?;
        }
    }
    let file = w.into_inner().map_err(|e| io("writing")(e.into_error()))?;
    file.sync_all().map_err(io("syncing"))?;
    std::fs::rename(&tmp, to).map_err(io("renaming into place"))?;
    Ok(())
}

/// Drops nulls (options left unset), which TOML cannot hold.
fn without_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => m
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k, without_nulls(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other,
    }
}

/// What a loaded state gives: the target, its YCSB workload and the table.
pub struct Loaded {
    pub meta: KvStateMeta,
    pub config: TargetConfig,
    pub workload: Arc<CoreWorkload>,
    pub table: KvTable,
}

/// Loads a key-value state (its first line already known to be [`FIRST_LINE`]).
pub fn load(from: &Path) -> Result<Loaded, VerifyError> {
    let bad = |why: String| VerifyError::BadState {
        path: from.to_path_buf(),
        why,
    };
    let (meta, mut r): (KvStateMeta, _) = super::state::read_head(from, FIRST_LINE)?;
    let ty = storlab_targets::find_type(&meta.target_type)
        .ok_or_else(|| bad(format!("unknown target type `{}`", meta.target_type)))?;
    let table: toml::Table = serde_json::from_value(without_nulls(meta.target_options.clone()))
        .map_err(|e| bad(format!("target options: {e}")))?;
    let config = (ty.parse)(table).map_err(|e| {
        bad(format!(
            "target options: {}{}",
            if e.key.is_empty() {
                String::new()
            } else {
                format!("{}: ", e.key)
            },
            e.message
        ))
    })?;
    let mut props = Properties::new();
    for (k, v) in &meta.ycsb_properties {
        props.set(k, v, Origin::Study { key: k.clone() });
    }
    let workload =
        CoreWorkload::from_properties(&mut props).map_err(|e| bad(format!("ycsb: {e}")))?;
    let mut states = Vec::new();
    states
        .try_reserve_exact(meta.keys as usize)
        .map_err(|_| bad(format!("{} keys: too many to load", meta.keys)))?;
    let mut b = [0u8; 12];
    for _ in 0..meta.keys {
        r.read_exact(&mut b)
            .map_err(|e| bad(format!("it ends early: {e}")))?;
        let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        states.push(KeyState {
            acked: u(0),
            floor: u(4),
            failed: u(8),
        });
    }
    let table = KvTable::from_states(&meta.target, meta.generation_base, &states)?;
    Ok(Loaded {
        meta,
        config,
        workload: Arc::new(workload),
        table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_verify::kv::table::WriteOutcome;

    #[test]
    fn a_saved_table_loads_back_with_its_target_and_workload() {
        let dir = tempfile::tempdir().unwrap();
        let t = KvTable::with_base("kv", 10, 500).unwrap();
        let (s, l) = t.begin(3).unwrap();
        t.end(3, s, l, WriteOutcome::Acked);
        let (s, l) = t.begin(4).unwrap();
        t.end(4, s, l, WriteOutcome::Failed);
        let mut opts = toml::Table::new();
        opts.insert("port".into(), 16379.into());
        let config = (storlab_targets::find_type("redis").unwrap().parse)(opts).unwrap();
        let mut props = BTreeMap::new();
        props.insert("recordcount".to_string(), "10".to_string());
        props.insert("fieldcount".to_string(), "3".to_string());
        let to = dir.path().join("s/kv.vstate");
        save(&t, &config, &props, &to).unwrap();
        let back = load(&to).unwrap();
        assert_eq!(back.meta.target, "kv");
        assert_eq!(back.config.type_name(), "redis");
        assert_eq!(back.workload.field_count, 3);
        assert_eq!(back.table.generation_base, 500);
        assert_eq!(back.table.state(3), t.state(3));
        assert_eq!(back.table.state(4).failed, 1);
        std::fs::write(&to, format!("{FIRST_LINE}\n{{}}\n")).unwrap();
        assert!(matches!(load(&to), Err(VerifyError::BadState { .. })));
    }
}
