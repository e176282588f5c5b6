//! The RAID efficiency study end to end on a real array: Btrfs RAID 6 (data raid6, metadata
//! raid1c3) over eight loop devices (the brief's group), each member's image on its own small
//! XFS (so that a later fault can shut one member's XFS down). `studies/raid-efficiency.toml`
//! runs in quick mode: the raw members together, then the array, created and mounted by the
//! first array step's `before-step` events, measured the same way at the members' load
//! together (as many operations in flight); the efficiency table has all four rows. Then
//! a member fails under verified random writes (its XFS shut down), a spare replaces it while
//! the writes go on, and the verify pass finds every acknowledged block intact. Last, the
//! brief's high availability under real Pacemaker and Corosync (scripts/pacemaker.sh: two
//! nodes, each a set of namespaces and a cgroup): the array's resource group (mount, service
//! address, NFS-Ganesha) runs on node a, which loses power under verified random writes
//! through the export; node b fences it and runs the group, node a is powered on and the group
//! fails back to it; both outages and recoveries are measured and the fencing is recorded.
//! Each node reaches the members through its own volatile write cache (`storlab volatile-fs`),
//! so the power loss loses the UNSTABLE writes node a had not flushed: the verify pass names
//! them (`lost-unsynced`) and finds no other damage. The same failover with FILE_SYNC writes
//! loses none.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Lab, root_or_skip, text};

const MEMBERS: usize = 8;
/// The members and the spare.
const DEVICES: usize = MEMBERS + 2;

fn sh(args: &[&str]) -> Result<String, String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if !o.status.success() {
        return Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Eight members and a spare, each a loop device over an image on its own loop-mounted XFS
/// (1 GiB: smaller members make `btrfs replace` fail with ENOSPC); torn down (array
/// unmounted, loops detached, XFS unmounted, also the one shut down) on drop.
struct Members {
    dir: PathBuf,
    loops: Vec<String>,
    mounts: Vec<PathBuf>,
    array_mnt: PathBuf,
}

impl Members {
    fn new(dir: &Path) -> Result<Members, String> {
        let mut m = Members {
            dir: dir.to_path_buf(),
            loops: Vec::new(),
            mounts: Vec::new(),
            array_mnt: dir.join("array"),
        };
        std::fs::create_dir_all(&m.array_mnt).map_err(|e| e.to_string())?;
        for i in 0..DEVICES {
            let img = dir.join(format!("xfs{i}.img"));
            let mnt = dir.join(format!("xfs{i}"));
            std::fs::create_dir_all(&mnt).map_err(|e| e.to_string())?;
            let img_s = img.to_string_lossy().to_string();
            sh(&["truncate", "-s", "1100M", &img_s])?;
            sh(&["mkfs.xfs", "-q", "-f", &img_s])?;
            sh(&["mount", "-o", "loop", &img_s, &mnt.to_string_lossy()])?;
            m.mounts.push(mnt.clone());
            // Uncached, both layers: the loop under the XFS and the member's own loop read
            // their images with O_DIRECT, so neither side of the efficiency table is served
            // by the host's page cache (a quick run once showed the array at 434% of its
            // members). Where the filesystem below refuses, the loop stays buffered: said.
            let outer = sh(&["findmnt", "-n", "-o", "SOURCE", &mnt.to_string_lossy()])?;
            if let Err(e) = sh(&["losetup", "--direct-io=on", &outer]) {
                eprintln!("{outer} stays buffered (the page cache may serve its reads): {e}");
            }
            let member = mnt.join("member.img");
            sh(&["truncate", "-s", "1G", &member.to_string_lossy()])?;
            m.loops.push(sh(&[
                "losetup",
                "--direct-io=on",
                "-f",
                "--show",
                &member.to_string_lossy(),
            ])?);
        }
        Ok(m)
    }
}

/// The RAID study's Pacemaker cluster (`scripts/pacemaker.sh start`): nodes a and b online,
/// fencing configured, no resource group until the study's step 6 creates it (`serve`); on
/// drop, `stop` halts both nodes (and with them the array's mount in the serving node's mount
/// namespace). Declared after [`Members`], so dropped before it: the array is let go before
/// its loops.
struct Cluster {
    dir: PathBuf,
    env: Vec<(String, String)>,
}

fn pacemaker_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/pacemaker.sh")
}

impl Cluster {
    fn start(dir: &Path) -> Result<Cluster, String> {
        // The guard first: a half-started cluster is stopped too.
        let mut cluster = Cluster {
            dir: dir.to_path_buf(),
            env: Vec::new(),
        };
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        cluster.pacemaker(&["start"])?;
        let env = std::fs::read_to_string(dir.join("env.sh")).map_err(|e| e.to_string())?;
        cluster.env = env
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
            .filter(|(k, _)| k != "STORLAB_HA_NODE_CACHE")
            .collect();
        // The nodes' volatile write caches (serve --node-cache) run this test's binary.
        let bin = env!("CARGO_BIN_EXE_storlab").to_string();
        cluster.env.push(("STORLAB_HA_NODE_CACHE".into(), bin));
        Ok(cluster)
    }

    /// `scripts/pacemaker.sh SUBCOMMAND DIR ARGS...`'s output.
    fn pacemaker(&self, args: &[&str]) -> Result<String, String> {
        let script = pacemaker_script().to_string_lossy().to_string();
        let dir = self.dir.to_string_lossy().to_string();
        let mut argv = vec![script.as_str(), args[0], dir.as_str()];
        argv.extend_from_slice(&args[1..]);
        sh(&argv)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(pacemaker_script())
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

/// `path` is a mount point (in /proc/self/mounts).
fn mounted(path: &Path) -> bool {
    let p = path.to_string_lossy();
    std::fs::read_to_string("/proc/self/mounts")
        .map(|m| m.lines().any(|l| l.split(' ').nth(1) == Some(&*p)))
        .unwrap_or(false)
}

impl Drop for Members {
    fn drop(&mut self) {
        // At the study's end only node a has the array mounted (gone with its namespaces).
        if mounted(&self.array_mnt) {
            let _ = Command::new("umount").arg(&self.array_mnt).status();
        }
        for l in &self.loops {
            let _ = Command::new("losetup").args(["-d", l]).status();
        }
        // A detached loop lets go of its image asynchronously: until it has, the XFS holding
        // the image is busy and refuses to unmount (which left mounts and loops behind).
        for mnt in &self.mounts {
            for _ in 0..100 {
                let _ = Command::new("umount").arg(mnt).status();
                if !mounted(mnt) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn raid6_efficiency_study_runs_on_btrfs_over_loop_devices() {
    if !root_or_skip("loop devices, XFS and Btrfs") {
        return;
    }
    let lab = Lab::new();
    let members = Members::new(&lab.path().join("raid")).expect("set up the members");
    let cluster = Cluster::start(&lab.path().join("ha")).expect("start the Pacemaker cluster");
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/raid-efficiency.toml");
    let mut cmd = lab.cmd();
    cmd.args(["run", &study.to_string_lossy(), "--quick"]);
    for (i, l) in members.loops[..MEMBERS].iter().enumerate() {
        cmd.env(format!("STORLAB_RAID_M{i}"), l);
    }
    cmd.env("STORLAB_RAID_SPARE", &members.loops[MEMBERS]);
    cmd.env("STORLAB_RAID_SPARE2", &members.loops[MEMBERS + 1]);
    // STORLAB_HA_SERVER, _SCRIPT and _DIR: the cluster whose group serves the array in step 6.
    cmd.envs(cluster.env.iter().map(|(k, v)| (k, v)));
    cmd.env("STORLAB_RAID_MNT", &members.array_mnt);
    // Btrfs's strip is 64 KiB, whatever the brief's arrays use.
    cmd.env("STORLAB_RAID_STRIP", "64KiB");
    // The eighth member fails, then the seventh: its XFS is shut down, every I/O to its
    // image returns EIO.
    for (var, member) in [
        ("STORLAB_RAID_FAIL", MEMBERS - 1),
        ("STORLAB_RAID_FAIL2", MEMBERS - 2),
    ] {
        let shutdown = format!(
            "xfs_io -x -c shutdown '{}'",
            members.mounts[member].display()
        );
        cmd.env(var, shutdown);
    }
    let out = cmd.output().expect("run storlab");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("RAID efficiency"), "{stdout}");

    let study_folder = std::fs::read_dir(lab.results())
        .expect("results")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.join("raid.json").exists())
        .expect("a study folder with raid.json");
    let raid: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(study_folder.join("raid.json")).unwrap())
            .unwrap();
    let rows = raid["rows"].as_array().expect("rows");
    let patterns: Vec<&str> = rows
        .iter()
        .map(|r| r["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(
        patterns,
        [
            "sequential-read",
            "sequential-write",
            "random-read",
            "random-write"
        ],
        "{raid:#}"
    );
    for r in rows {
        for k in ["raw-rate", "theoretical-rate", "real-rate", "efficiency"] {
            let v = r[k].as_f64().unwrap_or(f64::NAN);
            assert!(
                v.is_finite() && v > 0.0,
                "{k} of {}: {v}\n{raid:#}",
                r["pattern"]
            );
        }
        assert_eq!(r["raw"]["errors"], 0, "{r:#}");
        assert_eq!(r["real"]["errors"], 0, "{r:#}");
        // Like with like: the array kept as many operations in flight as the members
        // together (8 members x 1 thread x the quick queue depth; 8 threads on the array).
        let (raw, real) = (&r["raw"]["load"], &r["real"]["load"]);
        assert_eq!(raw["targets"], 8, "{r:#}");
        assert_eq!(raw["threads-per-target"], 1, "{r:#}");
        assert_eq!(real["threads"], 8, "{r:#}");
        assert_eq!(real["queue-depth"], raw["queue-depth"], "{r:#}");
        assert!(raw["in-flight"].as_u64().unwrap() >= 64, "{r:#}");
        assert_eq!(raw["in-flight"], real["in-flight"], "{r:#}");
    }
    // A row beyond what its members allow is warned as a cache, not shown as an efficiency;
    // no other warning (the loads are equal).
    let beyond = rows
        .iter()
        .filter(|r| r["efficiency"].as_f64().unwrap() > 1.05)
        .count();
    let warnings = raid["warnings"].as_array().map_or(0, |w| w.len());
    assert_eq!(warnings, beyond, "{raid:#}");
    if beyond > 0 {
        eprintln!("rows beyond the members (cached): {beyond}\n{raid:#}");
    }
    assert!(
        stdout.contains(
            "Outstanding I/O (sequential read, sequential write): raw 8 members x 1 thread x QD 8 \
             = 64 in flight; array 8 threads x QD 8 = 64 in flight (equal)."
        ),
        "{stdout}"
    );
    // RAID 6 of 8 members, 64 KiB strips: 1 MiB writes cover a stripe (384 KiB), so the
    // sequential write theoretical = raw x 6/8 (full stripes); random write = raw / 4.
    let seq_write = &rows[1];
    let ratio =
        seq_write["theoretical-rate"].as_f64().unwrap() / seq_write["raw-rate"].as_f64().unwrap();
    assert!((ratio - 6.0 / 8.0).abs() < 1e-9, "{ratio}");
    assert!(
        seq_write["theoretical-rule"]
            .as_str()
            .is_some_and(|r| r.contains("full-stripe")),
        "{seq_write:#}"
    );
    let rand_write = &rows[3];
    let ratio =
        rand_write["theoretical-rate"].as_f64().unwrap() / rand_write["raw-rate"].as_f64().unwrap();
    assert!((ratio - 0.25).abs() < 1e-9, "{ratio}");
    assert!(rand_write["model-rate"].as_f64().is_some_and(|v| v > 0.0));

    // The array was made by the first array step's before-step events, which are in its run's
    // summary.
    let summary = std::fs::read_dir(&study_folder)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("summary.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| serde_json::from_str::<serde_json::Value>(&t).unwrap())
        .find(|s| s["step"] == "array-seq-write")
        .expect("the array-seq-write run");
    let events: Vec<(&str, &str, i64)> = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"].is_string())
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["status"].as_str().unwrap(),
                e["exit-code"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        events,
        [("make-array", "ok", 0), ("mount-array", "ok", 0)],
        "{:#}",
        summary["events"]
    );

    // Step 4: two members failed, the spares replaced them one after the other (each rebuild
    // timed by its wait-for), and every acknowledged block read back after the run was intact.
    let failures = raid["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 3, "{raid:#}");
    let f = &failures[0];
    assert_eq!(f["step"], "array-member-failure");
    assert_eq!(f["kind"], "member-failure");
    let events: Vec<(&str, &str)> = f["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("fail-member", "ok"),
            ("fail-second-member", "ok"),
            ("rebuild", "ok")
        ],
        "{f:#}"
    );
    let rebuild_s = f["events"][2]["duration-seconds"].as_f64().unwrap();
    assert!(rebuild_s > 0.0, "{f:#}");
    let v = &f["verify"];
    assert!(v["checked"].as_u64().unwrap() > 0, "{f:#}");
    for class in ["lost", "torn", "misplaced", "foreign", "unreadable"] {
        assert_eq!(v[class], 0, "{class}: {f:#}");
    }
    assert_eq!(
        v["intact"].as_u64().unwrap(),
        v["checked"].as_u64().unwrap(),
        "{f:#}"
    );
    // Phases: before the failure, degraded, rebuilding, after (some may share an interval
    // edge in quick mode, never all).
    let phases = f["phases"].as_array().unwrap();
    assert!(phases.len() >= 3, "{f:#}");
    assert_eq!(phases[0]["from"], "start", "{f:#}");
    assert!(
        phases.iter().any(|p| p["to"]
            .as_str()
            .is_some_and(|t| t.contains("`rebuild` done"))),
        "{f:#}"
    );
    assert!(stdout.contains("Member failure and rebuild"), "{stdout}");

    // Step 5: after a remount, the `verify` event read every block acknowledged in step 4
    // back from the rebuilt array: all intact.
    let after = std::fs::read_dir(&study_folder)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("summary.json"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| serde_json::from_str::<serde_json::Value>(&t).unwrap())
        .find(|s| s["step"] == "array-after-rebuild")
        .expect("the array-after-rebuild run");
    let verify_event = after["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "verify-after-remount")
        .expect("the verify event");
    assert_eq!(verify_event["status"], "ok", "{verify_event:#}");
    assert_eq!(
        verify_event["verify"]["blocks-checked"], v["checked"],
        "{verify_event:#}"
    );
    assert_eq!(
        verify_event["verify"]["intact"]["blocks"], verify_event["verify"]["blocks-checked"],
        "{verify_event:#}"
    );

    // Step 6: node a lost under verified writes through the export, node b fencing it and
    // serving the same export of the same members, then the group back on node a: two
    // outages, successes again after each. Each node reaches the members through its own
    // volatile write cache, so node a's power loss lost the UNSTABLE writes it had not yet
    // flushed (named by the verify pass, expected by the study), and no synced one.
    let unsynced = node_failover(&failures[1], "array-node-failover", "array-nfs");
    assert!(unsynced > 0, "no unsynced write lost: {:#}", failures[1]);
    // Step 7: the same with FILE_SYNC writes: every acknowledged write found.
    let unsynced = node_failover(&failures[2], "array-node-failover-synced", "array-nfs-sync");
    assert_eq!(unsynced, 0, "{:#}", failures[2]);
    assert_eq!(failures[2]["verify"]["lost"], 0, "{:#}", failures[2]);
    // Pacemaker runs the group on node a again, and the fencing log names node a.
    assert_eq!(
        cluster.pacemaker(&["where"]).as_deref(),
        Ok("a"),
        "the group after the failback"
    );
    let fencing = std::fs::read_to_string(cluster.dir.join("fencing.log")).unwrap_or_default();
    assert!(fencing.contains("by b: fence off a: killed"), "{fencing}");
    assert!(
        stdout.contains("Node failover: array-node-failover")
            && stdout.contains("Node failover: array-node-failover-synced"),
        "{stdout}"
    );

    // The report shows the table.
    let report = lab.run(&[
        "report",
        &study_folder.to_string_lossy(),
        "--format",
        "md",
        "-o",
        "-",
    ]);
    let (md, err) = text(&report);
    assert!(report.status.success(), "{err}");
    assert!(
        md.contains("RAID efficiency") && md.contains("| Random write |"),
        "{md}"
    );
    assert!(
        md.contains("### Member failure and rebuild: array-member-failure")
            && md.contains("Event `rebuild` (wait-for): ok"),
        "{md}"
    );
    // In the same report as the table: the node failover, its outage and its verify pass.
    let section = md
        .split("### Node failover: array-node-failover")
        .nth(1)
        .unwrap_or_else(|| panic!("no node failover section:\n{md}"));
    let section = section.split("\n#").next().unwrap_or(section);
    eprintln!("### Node failover: array-node-failover{section}");
    assert!(
        section.contains("Event `node-a-power-off` (power-off): ok")
            && section.contains("Event `export-served-again` (wait-for): ok")
            && section.contains("Event `failback` (exec): ok")
            && section.contains("Event `export-served-on-a` (wait-for): ok")
            && section.contains("Recovery after `node-a-power-off` at ")
            && section.contains("Recovery after `failback` at ")
            && section.contains("`fencing-log` printed: ")
            && section
                .contains(" lost (acknowledged writes not found: 0 synced before they were lost, ")
            && section
                .contains(" not yet synced when a power-off or SIGKILL came, 0 with no crash)"),
        "{section}"
    );
    let synced = md
        .split("### Node failover: array-node-failover-synced")
        .nth(1)
        .unwrap_or_else(|| panic!("no synced node failover section:\n{md}"));
    let synced = synced.split("\n#").next().unwrap_or(synced);
    eprintln!("### Node failover: array-node-failover-synced{synced}");
    assert!(
        synced.contains(" intact, 0 lost (acknowledged writes not found: 0 synced"),
        "{synced}"
    );
    // The brief's published efficiency table after the measured one, every figure found.
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("no {s}:\n{md}"));
    assert!(at("RAID efficiency") < at("## Published figures"), "{md}");
    let published = md
        .split("## Published figures: xinnor-xiraid-raid6")
        .nth(1)
        .unwrap_or_else(|| panic!("no published figures:\n{md}"));
    let published = published.split("\n#").next().unwrap_or(published);
    eprintln!("## Published figures: xinnor-xiraid-raid6{published}");
    assert!(!published.contains("not measured here"), "{published}");
    assert!(
        published.contains("| Sequential write (RAID efficiency) | theoretical | 64.5 GB/s |"),
        "{published}"
    );
    let page = lab.path().join("raid.html");
    let out = lab.run(&[
        "report",
        &study_folder.to_string_lossy(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    common::shot::first_screen(&page, "brief-raid-efficiency");
}

/// A node failover run in raid.json: node a powered off, the export answering again from
/// node b (Pacemaker's failover, node a fenced), node a powered on and the group moved back
/// to it, the export answering from node a; an outage the clients saw around each move and
/// their first success after it, and a verify pass through node a that found every
/// acknowledged write but those not yet synced when node a lost power. Returns how many of
/// those were lost.
fn node_failover(f: &serde_json::Value, step: &str, target: &str) -> u64 {
    assert_eq!(f["step"], step, "{f:#}");
    assert_eq!(f["kind"], "node-failover", "{f:#}");
    assert_eq!(f["target"], target, "{f:#}");
    let events: Vec<(&str, &str)> = f["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        events,
        [
            ("node-a-power-off", "ok"),
            ("export-served-again", "ok"),
            ("node-a-power-on", "ok"),
            ("failback", "ok"),
            ("export-served-on-a", "ok"),
            ("fencing-log", "ok")
        ],
        "{f:#}"
    );
    let took = |i: usize| f["events"][i]["duration-seconds"].as_f64().unwrap();
    let (failover_s, power_on_s, failback_s) = (took(1), took(2), took(3));
    assert!(failover_s > 0.0 && failback_s > 0.0, "{f:#}");
    // Node b fenced node a (the fence agent's log, kept as the event's output).
    let fencing = f["events"][5]["output"].as_str().unwrap_or("");
    assert!(fencing.contains("by b: fence off a: killed"), "{f:#}");
    for (r, event) in f["recovery"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["node-a-power-off", "failback"])
    {
        assert_eq!(r["event"], event, "{f:#}");
        assert!(r["outage-seconds"].as_f64().unwrap() > 0.0, "{f:#}");
        let first = r["time-to-first-success-seconds"].as_f64();
        assert!(first.is_some_and(|t| t > 0.0), "{f:#}");
    }
    assert_eq!(f["recovery"].as_array().unwrap().len(), 2, "{f:#}");
    eprintln!(
        "failover (power-off to the export answering from b) {failover_s:.3} s, power-on \
         {power_on_s:.3} s, failback (to the export answering from a) {failback_s:.3} s; \
         client outages {:.3} s and {:.3} s",
        f["recovery"][0]["outage-seconds"], f["recovery"][1]["outage-seconds"]
    );
    // Operations succeeded after the failback: the last phase has some.
    let phases = f["phases"].as_array().unwrap();
    let last = phases.last().expect("phases");
    assert!(last["ops"].as_u64().unwrap() > 0, "{f:#}");
    let v = &f["verify"];
    assert!(v["checked"].as_u64().unwrap() > 0, "{f:#}");
    for class in [
        "lost-durable",
        "lost-while-up",
        "torn",
        "misplaced",
        "foreign",
        "unreadable",
    ] {
        assert_eq!(v[class], 0, "{class}: {f:#}");
    }
    let unsynced = v["lost-unsynced"].as_u64().unwrap();
    assert_eq!(v["lost"], unsynced, "{f:#}");
    assert_eq!(
        v["intact"].as_u64().unwrap() + unsynced,
        v["checked"].as_u64().unwrap(),
        "{f:#}"
    );
    unsynced
}

#[test]
fn raid_section_errors_name_the_key() {
    let lab = Lab::new();
    let study = lab.write(
        "s.toml",
        r#"
[raid]
level = 6
members = ["a", "b", "c", "nope"]
array = "a"

[targets.a]
type = "null"
[targets.b]
type = "null"
[targets.c]
type = "null"

[workloads.w]
read-share = 1.0

[[steps]]
workload = "w"
targets = ["a"]
ops = 10
"#,
    );
    let out = lab.run(&["check", &study.to_string_lossy()]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("raid.members") && stderr.contains("no target named `nope`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("raid.array") && stderr.contains("`a` is also a member"),
        "{stderr}"
    );
    let bad_level = lab.write(
        "l.toml",
        &std::fs::read_to_string(&study)
            .unwrap()
            .replace("level = 6", "level = 4"),
    );
    let out = lab.run(&["check", &bad_level.to_string_lossy()]);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("s.toml") || stderr.contains("l.toml"),
        "{stderr}"
    );
    assert!(
        stderr.contains("raid.level") && stderr.contains("expected 0, 1, 5, 6, 10"),
        "{stderr}"
    );
}
