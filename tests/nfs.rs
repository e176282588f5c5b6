//! The `nfs` target against NFS-Ganesha (scripts/fileservers.sh, in its own network
//! namespace): verified writes read back through libnfs are intact, damage done to the
//! exported file afterwards is found through the server, and bad input or a server that is
//! not there is a clear error naming the target.

mod common;

use common::{Lab, server, text};
use std::os::unix::fs::FileExt;

/// The server URL (nfs://ADDR) and the folder holding the exports on the server's side.
fn nfs() -> Option<(String, std::path::PathBuf)> {
    let url = server("STORLAB_NFS_SERVER")?;
    let dir = server("STORLAB_NFS_EXPORTS_DIR")?;
    Some((url, dir.into()))
}

/// A file name of this test process in an export (tests share the server).
fn file_name(tag: &str) -> String {
    format!("storlab-test-{}-{tag}.dat", std::process::id())
}

fn verify_study(lab: &Lab, url: &str, qd: u32) -> std::path::PathBuf {
    lab.write(
        "nfs.toml",
        &format!(
            r#"
name = "nfs-verify"
[targets.share]
type = "nfs"
url = "{url}"
size = "4MiB"
[workloads.w]
read-share = 0.3
block-size = "4KiB"
queue-depth = {qd}
threads = 2
fsync-every = 64
verify = true
verify-state = "share.vstate"
[[steps]]
workload = "w"
targets = ["share"]
ops = 4000
"#
        ),
    )
}

fn summary(lab: &Lab) -> serde_json::Value {
    let dir = lab.study_folder();
    serde_json::from_str(&std::fs::read_to_string(dir.join("run-001/summary.json")).unwrap())
        .unwrap()
}

#[test]
fn verified_writes_over_nfs_read_back_intact_and_damage_is_found_through_the_server() {
    let Some((base, exports)) = nfs() else { return };
    let name = file_name("verify");
    let url = format!("{base}/export2/{name}");
    let local = exports.join("export2").join(&name);
    let lab = Lab::new();
    let s = verify_study(&lab, &url, 12);
    let o = lab.run(&["run", s.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let sum = summary(&lab);
    let t = &sum["targets"][0];
    assert_eq!(t["errors"], 0, "{t:#}");
    assert_eq!(t["session-used"]["nfs.version"], "3", "{t:#}");
    let v = &t["verify"];
    let checked = v["blocks-checked"].as_u64().unwrap();
    assert!(checked > 500 && checked <= 1024, "{v:#}");
    assert_eq!(v["intact"]["blocks"].as_u64(), Some(checked), "{v:#}");
    // The writes went to the exported file, as the server stores it.
    assert_eq!(std::fs::metadata(&local).unwrap().len(), 4 << 20);

    // Damage one acknowledged block on the server's disk: `storlab verify` reads it back
    // through the server and names it.
    let first = v["intact"]["first-offsets"][0].as_u64().unwrap();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&local)
        .unwrap();
    f.write_all_at(&[0u8; 4096], first).unwrap();
    f.sync_all().unwrap();
    let o = lab.run(&["verify", "share.vstate", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        r["foreign"]["first-offsets"][0].as_u64(),
        Some(first),
        "{r:#}"
    );
    assert_eq!(r["intact"]["blocks"].as_u64(), Some(checked - 1), "{r:#}");
    let _ = std::fs::remove_file(&local);
}

#[test]
fn the_test_file_is_filled_once_then_reused() {
    let Some((base, exports)) = nfs() else { return };
    let name = file_name("reuse");
    let local = exports.join("export3").join(&name);
    let lab = Lab::new();
    let s = lab.write(
        "reuse.toml",
        &format!(
            r#"
name = "nfs-reuse"
[targets.share]
type = "nfs"
url = "{base}/export3/{name}?version=3"
size = "2MiB"
[workloads.r]
read-share = 1.0
block-size = "8KiB"
queue-depth = 4
[[steps]]
workload = "r"
targets = ["share"]
ops = 500
[[steps]]
workload = "r"
targets = ["share"]
ops = 500
"#
        ),
    );
    let o = lab.run(&["run", s.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let study = lab.study_folder();
    let used = |run: &str| -> String {
        let s: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(study.join(run).join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(s["targets"][0]["ops"], 500, "{s:#}");
        s["targets"][0]["session-used"]["nfs.test-file"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(used("run-001"), "created and filled (2097152 bytes)");
    assert_eq!(used("run-002"), "reused (2097152 bytes)");
    // Filled with data, not a sparse file of zeros.
    let data = std::fs::read(&local).unwrap();
    assert_eq!(data.len(), 2 << 20);
    assert!(data.iter().filter(|&&b| b == 0).count() < data.len() / 100);
    let _ = std::fs::remove_file(&local);
}

#[test]
fn an_unknown_export_or_a_server_that_is_not_there_is_an_error_naming_the_target() {
    let Some((base, _)) = nfs() else { return };
    for (url, expect) in [
        (format!("{base}/no-such-export/f.dat"), "no-such-export"),
        // Nothing listens on port 1 of the loopback: refused at once.
        (
            "nfs://127.0.0.1/export1/f.dat?nfsport=1&mountport=1".to_string(),
            "127.0.0.1",
        ),
    ] {
        let lab = Lab::new();
        let s = lab.write(
            "bad.toml",
            &format!(
                r#"
name = "nfs-bad"
[targets.share]
type = "nfs"
url = "{url}"
size = "1MiB"
[workloads.r]
read-share = 1.0
block-size = "4KiB"
[[steps]]
workload = "r"
targets = ["share"]
ops = 10
"#
            ),
        );
        let o = lab.run(&["run", s.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{url}: {out}{err}");
        assert!(
            err.contains("nfs target") && err.contains(expect) && err.contains("share"),
            "{url}: {err}"
        );
    }
}

fn fileservers_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fileservers.sh")
}

/// File servers of this test alone (the shared ones stay up for the other tests), stopped
/// when dropped.
struct OwnServers {
    dir: tempfile::TempDir,
    env: std::collections::HashMap<String, String>,
}

impl OwnServers {
    fn start() -> OwnServers {
        let dir = tempfile::tempdir().unwrap();
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fileservers.sh");
        let o = std::process::Command::new(&script)
            .arg("start")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
        let env = std::fs::read_to_string(dir.path().join("env.sh"))
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .collect();
        OwnServers { dir, env }
    }
}

impl Drop for OwnServers {
    fn drop(&mut self) {
        let script =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fileservers.sh");
        let _ = std::process::Command::new(script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

#[test]
fn a_server_killed_mid_run_shows_as_an_outage_and_the_run_goes_on_after_its_restart() {
    // Servers installed (the shared ones run) and root (a network namespace of our own).
    if nfs().is_none() || !common::root_or_skip("starts its own NFS-Ganesha in a network namespace")
    {
        return;
    }
    let own = OwnServers::start();
    let (server, pid_file) = (
        &own.env["STORLAB_NFS_SERVER"],
        &own.env["STORLAB_NFS_PID_FILE"],
    );
    let script = fileservers_script();
    let lab = Lab::new();
    let s = lab.write(
        "kill.toml",
        &format!(
            r#"
name = "nfs-kill"
[targets.share]
type = "nfs"
url = "{server}/export1/iobw.tst"
size = "8MiB"
[workloads.w]
read-share = 0.5
block-size = "4KiB"
queue-depth = 4
[[steps]]
workload = "w"
targets = ["share"]
warmup = "1s"
duration = "6s"
[[steps.events]]
name = "kill-server"
at = "1500ms"
action = "kill"
signal = "KILL"
pid-file = "{pid_file}"
[[steps.events]]
name = "restart-server"
at = "3s"
action = "exec"
command = ["{script}", "restart-nfs", "{dir}"]
"#,
            script = script.display(),
            dir = own.dir.path().display(),
        ),
    );
    let o = lab.run(&["run", s.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let sum = summary(&lab);
    assert_eq!(sum["status"], "complete", "{sum:#}");
    assert_eq!(sum["end-reason"], "duration", "{sum:#}");
    let kill = &sum["recovery"][0];
    assert_eq!(kill["event"], "kill-server", "{kill:#}");
    // The server was gone: the timeline shows an outage (the worker does not sit out the
    // outage inside one long interval), then operations succeed again.
    assert!(kill["outage-seconds"].as_f64().unwrap() > 0.0, "{kill:#}");
    assert!(
        kill["time-to-first-success-seconds"].is_number(),
        "{kill:#}"
    );
    let phases = sum["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3, "{phases:#?}");
    assert!(phases[2]["ops"].as_u64().unwrap() > 0, "{phases:#?}");
}
