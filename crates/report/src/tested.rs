//! What was tested, one sentence per target, from the stored plan and system capture: the
//! target's type and where it points (a path, a URI); for storage the filesystem, the device's
//! model, size and kind; the engine; for servers and libraries the software and version the
//! target reported. Nothing is guessed: what was not captured is not said. A file server's
//! shares are one sentence for the server ([`crate::headline::fileserver`]), not one per share.

use storlab_results::stored::StoredRun;
use storlab_results::system::{BlockDeviceInfo, TargetStorage};

/// One sentence per target (in order of first appearance), then one per file server:
/// (target or server name, sentence).
pub fn sentences(runs: &[StoredRun]) -> Vec<(String, String)> {
    let (servers, shares) = crate::headline::fileserver::tested_sentences(runs);
    let mut out: Vec<(String, String)> = Vec::new();
    for r in runs {
        for (i, t) in r.summary.targets.iter().enumerate() {
            if out.iter().any(|(n, _)| *n == t.name) || shares.contains(&t.name) {
                continue;
            }
            let mut s = sentence(r, i);
            s.push_str(&server_memory(runs, &t.name));
            out.push((t.name.clone(), s));
        }
    }
    out.extend(servers);
    out
}

/// What each run set of the target's server memory (`server-cgroup`): ` Server memory:
/// run 2: memory.max of ... set to ...`, from the runs' `server-memory-*` events; empty when
/// none set or declined one.
fn server_memory(runs: &[StoredRun], target: &str) -> String {
    let prefix = format!("{target}: ");
    let said: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.summary
                .events
                .iter()
                .map(move |e| (r.summary.run_index, e))
        })
        .filter(|(_, e)| e.kind == "server-memory-limited" || e.kind == "server-memory-not-limited")
        .filter_map(|(run, e)| {
            let detail = e.detail.strip_prefix(&prefix)?;
            Some(format!("run {run}: {detail}"))
        })
        .collect();
    if said.is_empty() {
        return String::new();
    }
    format!(" Server memory: {}.", said.join("; "))
}

fn sentence(r: &StoredRun, i: usize) -> String {
    let t = &r.summary.targets[i];
    let cfg = r.target_config_json(i);
    let get = |k: &str| cfg.and_then(|c| c.get(k)).and_then(|v| v.as_str());
    let kind = get("type").unwrap_or(&t.target_type).to_string();
    let mut parts = vec![format!("a {kind} target")];
    let path = get("path").or_else(|| get("dir")).or_else(|| get("share"));
    if let Some(p) = path {
        parts.push(format!("at {p}"));
    }
    if let Some(u) = get("uri").or_else(|| get("url")).or_else(|| get("server")) {
        parts.push(format!("on {u}"));
    }
    let mut s = parts.join(" ");
    if let Some(storage) = r
        .system
        .as_ref()
        .and_then(|sys| storage_of(&sys.targets, path))
    {
        s.push_str(&storage_text(storage));
    }
    let mut engine = Vec::new();
    if let Some(e) = get("engine") {
        engine.push(format!("engine {e}"));
    }
    if let Some(d) = cfg.and_then(|c| c.get("direct")).and_then(|v| v.as_bool()) {
        engine.push(if d { "O_DIRECT" } else { "page cache" }.to_string());
    }
    if !engine.is_empty() {
        s.push_str(&format!(", {}", engine.join(", ")));
    }
    let mut software: Vec<String> = r
        .system
        .iter()
        .flat_map(|sys| &sys.target_software)
        .filter(|x| x.target == t.name)
        .map(|x| format!("{} {}", x.software, x.version))
        .collect();
    if software.is_empty() {
        software = r
            .summary
            .software
            .iter()
            .map(|(k, v)| format!("{} {v}", k.strip_prefix("db.").unwrap_or(k)))
            .collect();
    }
    if !software.is_empty() {
        s.push_str(&format!("; software: {}", software.join(", ")));
    }
    s.push('.');
    s
}

/// The captured storage of a target path (the only one when the target names no path).
fn storage_of<'a>(all: &'a [TargetStorage], path: Option<&str>) -> Option<&'a TargetStorage> {
    match path {
        Some(p) => all
            .iter()
            .find(|s| s.path == p || s.canonical_path.as_deref() == Some(p)),
        None if all.len() == 1 => all.first(),
        None => None,
    }
}

/// `, on ext4 (mounted at /) on vda (virtio 0x1af4, 274.9 GB, rotational)`.
fn storage_text(s: &TargetStorage) -> String {
    let mut out = String::new();
    if let Some(fs) = &s.filesystem {
        out.push_str(&format!(
            ", on {} (mounted at {})",
            fs.fs_type, fs.mount_point
        ));
    } else if s.is_block_device {
        out.push_str(", the raw block device");
    }
    // The whole disk when the path is on a partition or a stack, else the device itself.
    let dev = s
        .block_devices
        .iter()
        .rev()
        .find(|d| d.whole_disk.is_none() && d.dm_name.is_none())
        .or(s.block_devices.first());
    if let Some(d) = dev {
        out.push_str(&format!(" on {}", device_text(d)));
    }
    out
}

fn device_text(d: &BlockDeviceInfo) -> String {
    let mut what = Vec::new();
    match (&d.vendor, &d.model) {
        (Some(v), Some(m)) => what.push(format!("{} {}", v.trim(), m.trim())),
        (None, Some(m)) => what.push(m.trim().to_string()),
        (Some(v), None) => what.push(format!("vendor {}", v.trim())),
        (None, None) => what.push("model not reported".into()),
    }
    if let Some(b) = d.size_bytes {
        what.push(format!("{:.1} GB", b as f64 / 1e9));
    }
    match d.rotational {
        Some(true) => what.push("rotational".into()),
        Some(false) => what.push("non-rotational".into()),
        None => {}
    }
    if let Some(f) = &d.loop_backing_file {
        what.push(format!("loop device over {f}"));
    }
    format!("{} ({})", d.name, what.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_says_its_model_size_and_kind() {
        let d = BlockDeviceInfo {
            name: "nvme0n1".into(),
            model: Some("Samsung SSD 980 PRO 1TB ".into()),
            size_bytes: Some(1_000_204_886_016),
            rotational: Some(false),
            ..Default::default()
        };
        assert_eq!(
            device_text(&d),
            "nvme0n1 (Samsung SSD 980 PRO 1TB, 1000.2 GB, non-rotational)"
        );
        let d = BlockDeviceInfo {
            name: "vda".into(),
            ..Default::default()
        };
        assert_eq!(device_text(&d), "vda (model not reported)");
    }
}
