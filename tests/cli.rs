//! The real binary on real targets: runs, results folders and store, Ctrl-C, SIGKILL, the
//! coordinated-omission stall, every example study in quick mode, and the brief.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Lab, text};
use serde_json::Value;

fn json_runs(stdout: &str) -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {stdout}"))
}

fn kind<'a>(run: &'a Value, target: usize, op: &str) -> &'a Value {
    &run["targets"][target]["kinds"][op]
}

#[test]
fn file_target_runs_with_both_engines_and_writes_a_results_folder() {
    let lab = Lab::new();
    let study = lab.write(
        "s.toml",
        r#"
[targets.a]
type = "file"
path = "a.dat"
size = "16MiB"
engine = "io-uring"
direct = true

[targets.b]
type = "file"
path = "b.dat"
size = "16MiB"
engine = "psync"

[workloads.mix]
block-size = "4KiB"
read-share = 0.7
fsync-every = 64

[[steps]]
workload = "mix"
targets = ["a", "b"]
together = true
ops = 4000
warmup = "100ms"
"#,
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let runs = json_runs(&stdout);
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r["status"], "complete");
    assert_eq!(r["end-reason"], "ops");
    for t in 0..2 {
        let reads = kind(r, t, "read")["ops"].as_u64().unwrap();
        let writes = kind(r, t, "write")["ops"].as_u64().unwrap();
        let fsyncs = kind(r, t, "fsync")["ops"].as_u64().unwrap();
        assert_eq!(reads + writes + fsyncs, 4000, "target {t}");
        assert!(fsyncs > 0 && writes > 0 && reads > writes);
        assert_eq!(kind(r, t, "read")["bytes"].as_u64().unwrap(), reads * 4096);
        assert_eq!(r["targets"][t]["errors"], 0);
    }
    assert_eq!(r["total"]["ops"].as_u64().unwrap(), 8000);
    // The data files were laid out to their full size.
    assert_eq!(
        std::fs::metadata(lab.path().join("a.dat")).unwrap().len(),
        16 << 20
    );
    // The run's folder holds everything.
    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let run = folder.join("run-001");
    for f in [
        "study.toml",
        "plan.json",
        "system.json",
        "summary.json",
        "timeline.csv",
        "histograms.hlog",
    ] {
        assert!(run.join(f).exists(), "{f} missing in {}", run.display());
    }
    let system: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("system.json")).unwrap()).unwrap();
    assert!(
        system["targets"][0]["filesystem"]["fs-type"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{system}"
    );
    let timeline = std::fs::read_to_string(run.join("timeline.csv")).unwrap();
    assert!(timeline.starts_with("second,phase,target,op,ops"));
    assert!(timeline.lines().count() > 1);
    let hlog = std::fs::read_to_string(run.join("histograms.hlog")).unwrap();
    assert!(hlog.contains("a.read"), "{hlog}");
    // The store knows the run and shows it again from what it stored.
    let list = lab.run(&["results", "list"]);
    let (l, e) = text(&list);
    assert!(list.status.success(), "{e}");
    assert!(l.contains("complete"), "{l}");
    let id = r["run-id"].as_str().unwrap();
    let show = lab.run(&["results", "show", id]);
    let (s, _) = text(&show);
    assert!(show.status.success());
    assert!(s.contains("fsync") && s.contains("read"), "{s}");
}

#[test]
fn open_loop_stall_shows_in_intended_latency_not_in_service_p99() {
    let lab = Lab::new();
    let study = lab.write(
        "stall.toml",
        r#"
[targets.slow]
type = "null"
stall-after-ops = 2000
stall = "500ms"

[workloads.paced]
rate-ops = 2000
queue-depth = 1

[[steps]]
workload = "paced"
targets = ["slow"]
duration = "3s"
"#,
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let r = &json_runs(&stdout)[0];
    let read = kind(r, 0, "read");
    let service = &read["service-latency"];
    let intended = &read["intended-latency"];
    let ms = |v: &Value| v.as_u64().unwrap() as f64 / 1e6;
    // The stall: ~1000 operations should have started during the 500 ms.
    assert!(
        ms(&intended["p99.9-ns"]) >= 400.0,
        "intended p99.9 {} ms",
        ms(&intended["p99.9-ns"])
    );
    assert!(
        ms(&intended["max-ns"]) >= 450.0,
        "intended max {} ms",
        ms(&intended["max-ns"])
    );
    assert!(
        ms(&intended["p99-ns"]) >= 100.0,
        "intended p99 {} ms",
        ms(&intended["p99-ns"])
    );
    // Only the one stalled operation itself took long to serve.
    assert!(
        ms(&service["p99-ns"]) < 5.0,
        "service p99 {} ms",
        ms(&service["p99-ns"])
    );
    assert!(
        ms(&service["max-ns"]) >= 450.0,
        "service max {} ms",
        ms(&service["max-ns"])
    );
    // The schedule was caught up: the rate was kept over the run.
    let ops = read["ops"].as_u64().unwrap();
    assert!((5500..=6100).contains(&ops), "ops {ops}");
}

fn long_study(lab: &Lab) -> std::path::PathBuf {
    lab.write(
        "long.toml",
        r#"
[targets.n]
type = "null"

[workloads.paced]
rate-ops = 5000

[[steps]]
workload = "paced"
targets = ["n"]
duration = "60s"

[[steps]]
workload = "paced"
targets = ["n"]
duration = "60s"
"#,
    )
}

/// Waits until the run has written at least one measured second.
fn wait_for_timeline(lab: &Lab, deadline: Duration) {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if let Ok(dirs) = std::fs::read_dir(lab.results()) {
            for d in dirs.flatten() {
                let t = d.path().join("run-001/timeline.csv");
                if std::fs::read_to_string(&t)
                    .is_ok_and(|s| s.lines().any(|l| l.starts_with("1,measure")))
                {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no measured second written within {deadline:?}");
}

#[test]
fn ctrl_c_keeps_partial_results_and_skips_later_runs() {
    let lab = Lab::new();
    let study = long_study(&lab);
    let child = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_timeline(&lab, Duration::from_secs(20));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "did not stop promptly"
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let runs = json_runs(&stdout);
    assert_eq!(runs.len(), 1, "the second run should have been skipped");
    assert_eq!(runs[0]["status"], "partial");
    assert_eq!(runs[0]["end-reason"], "interrupted");
    assert!(runs[0]["total"]["ops"].as_u64().unwrap() >= 5000);
    assert!(runs[0]["warnings"].to_string().contains("partial run"));
    let (list, _) = text(&lab.run(&["results", "list"]));
    assert!(list.contains("partial"), "{list}");
}

#[test]
fn sigkill_mid_run_leaves_a_readable_store() {
    let lab = Lab::new();
    let study = long_study(&lab);
    let mut child = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_timeline(&lab, Duration::from_secs(20));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = lab.run(&["results", "list"]);
    let (list, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(list.contains("interrupted"), "{list}");
    // What was measured before the kill is on disk.
    let out = lab.run(&["results", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&text(&out).0).unwrap();
    let folder = rows[0]["folder"].as_str().unwrap();
    let timeline =
        std::fs::read_to_string(std::path::Path::new(folder).join("timeline.csv")).unwrap();
    assert!(
        timeline.lines().any(|l| l.starts_with("1,measure")),
        "{timeline}"
    );
    // A new run after the kill works with the same store.
    let quick = lab.run(&["run", study.to_str().unwrap(), "--quick", "-q"]);
    assert!(quick.status.success(), "{}", text(&quick).1);
}

#[test]
fn every_example_study_runs_in_quick_mode() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for e in std::fs::read_dir(&examples).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        // An example that starts its own redis-server needs it installed (skipped otherwise,
        // unless STORLAB_REQUIRE_SERVERS is set), and a free port.
        let uses_redis = std::fs::read_to_string(&p)
            .unwrap()
            .contains("\"redis-server\"");
        let have_redis = ["redis-server", "redis-cli"].iter().all(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok()
        });
        if uses_redis && !have_redis {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
                "{}: redis-server is not installed and STORLAB_REQUIRE_SERVERS is set",
                p.display()
            );
            eprintln!("skipped {}: redis-server is not installed", p.display());
            continue;
        }
        // An example on the test file servers (scripts/fileservers.sh) needs them started.
        let uses_file_servers = std::fs::read_to_string(&p)
            .unwrap()
            .contains("${STORLAB_NFS_SERVER}");
        if uses_file_servers && std::env::var_os("STORLAB_FILESERVERS_DIR").is_none() {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
                "{}: the file servers are not started (STORLAB_FILESERVERS_DIR) and STORLAB_REQUIRE_SERVERS is set",
                p.display()
            );
            eprintln!(
                "skipped {}: scripts/fileservers.sh start DIR; . DIR/env.sh",
                p.display()
            );
            continue;
        }
        // An example on the test database servers (scripts/servers.sh) needs them started.
        let uses_servers = std::fs::read_to_string(&p)
            .unwrap()
            .contains("${STORLAB_TEST_POSTGRES_URL}");
        if uses_servers && std::env::var_os("STORLAB_TEST_POSTGRES_URL").is_none() {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
                "{}: the test servers are not started (STORLAB_TEST_POSTGRES_URL) and STORLAB_REQUIRE_SERVERS is set",
                p.display()
            );
            eprintln!(
                "skipped {}: scripts/servers.sh start DIR; . DIR/env.sh",
                p.display()
            );
            continue;
        }
        // An example that builds its own array (scripts/btrfs-members.sh: loop devices, XFS
        // and Btrfs) needs root.
        let uses_members = std::fs::read_to_string(&p)
            .unwrap()
            .contains("scripts/btrfs-members.sh");
        if uses_members
            && !common::root_or_skip(&format!("{}: loop devices, XFS and Btrfs", p.display()))
        {
            continue;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let lab = Lab::new();
        let members =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/btrfs-members.sh");
        let run = |args: &[&str]| {
            lab.cmd()
                .env("STORLAB_REDIS_KILL_PORT", port.to_string())
                // The example's array lives in the lab (the script removes what it made there),
                // and the script is found from the test's working directory.
                .env("STORLAB_DEGRADED_DIR", lab.path().join("degraded"))
                .env("STORLAB_BTRFS_MEMBERS", &members)
                .args(args)
                .output()
                .expect("run storlab")
        };
        let check = run(&["check", p.to_str().unwrap()]);
        assert!(
            check.status.success(),
            "{}: {}",
            p.display(),
            text(&check).1
        );
        let out = run(&["run", p.to_str().unwrap(), "--quick", "--json", "-q"]);
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{}: {stderr}", p.display());
        for r in json_runs(&stdout) {
            assert_eq!(r["status"], "complete", "{}: {r}", p.display());
            assert!(
                r["total"]["ops"].as_u64().unwrap() > 0,
                "{}: {r}",
                p.display()
            );
        }
        n += 1;
    }
    assert!(n >= 2, "expected example studies in {}", examples.display());
}

#[test]
fn brief_quick_characterizes_a_folder_and_cleans_up() {
    let lab = Lab::new();
    let data = lab.path().join("data");
    let out = lab.run(&["brief", "--quick", "--dir", data.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    for step in [
        "seq-write",
        "seq-read",
        "rand-read",
        "rand-write",
        "kv-fill",
        "kv-readrandom",
        "kv-readwhilewriting",
    ] {
        assert!(stdout.contains(step), "{stdout}");
    }
    assert!(
        !data.join("storlab-brief.dat").exists(),
        "the data file should be removed"
    );
    assert!(
        !data.join("storlab-brief-rocksdb").exists(),
        "the database should be removed"
    );
    let md_line = stderr.lines().find(|l| l.starts_with("brief:")).unwrap();
    let md = std::fs::read_to_string(lab.path().join(md_line.trim_start_matches("brief:").trim()))
        .unwrap();
    assert!(md.contains("| 4 | rand-read | queue-depth=32 |"), "{md}");
    assert_eq!(md.matches("| complete |").count(), 13, "{md}");
    assert!(md.contains("| 9 | kv-readrandom | threads=4 |"), "{md}");
    // The headline at the end of the terminal output, with the HTML's path after it.
    assert!(stdout.contains("headline (as in brief.html)"), "{stdout}");
    assert!(stdout.contains("random 4KiB read, QD 32"), "{stdout}");
    assert!(stdout.contains("readrandom, 16 threads"), "{stdout}");
    assert!(
        stderr
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("html:"),
        "{stderr}"
    );
    assert!(
        md.contains("## Headline") && md.contains("| random 4KiB read, QD 1 | data |"),
        "{md}"
    );

    // A second brief compared with the first: its figures beside, from the stored results.
    let first = lab.path().join(md_line.trim_start_matches("brief:").trim());
    let first = first.parent().unwrap().to_path_buf();
    let out = lab.run(&[
        "brief",
        "--quick",
        "--dir",
        data.to_str().unwrap(),
        "--compare",
        first.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("run-004/summary.json")).unwrap())
            .unwrap();
    assert_eq!(stored["parameters"]["queue-depth"], "32");
    let before = stored["targets"][0]["rate-ops"].as_f64().unwrap();
    let headline = &stdout[stdout.find("headline (as in brief.html)").expect(&stdout)..];
    assert!(
        headline.contains(&format!("compared with: {}", first.display())),
        "{headline}"
    );
    let header = headline.lines().find(|l| l.starts_with("test")).unwrap();
    for col in ["IOPS", "IOPS before", "change", "p99 before"] {
        assert!(header.contains(col), "{header}");
    }
    let row = headline
        .lines()
        .find(|l| l.starts_with("random 4KiB read, QD 32"))
        .unwrap();
    let cells: Vec<&str> = row
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    // test, target, IOPS, IOPS before, change, ...
    let shown_before: f64 = cells[3].replace(',', "").parse().unwrap();
    assert_eq!(shown_before, before.round(), "{row}");
    let now: f64 = cells[2].replace(',', "").parse().unwrap();
    let change: f64 = cells[4].trim_end_matches('%').parse().unwrap();
    assert!(
        (change - (now / before - 1.0) * 100.0).abs() < 0.1,
        "{row}: change {change}"
    );
    // The HTML: the same columns, the earlier figure stored exactly.
    let html_line = stderr.lines().find(|l| l.starts_with("html:")).unwrap();
    let html = std::fs::read_to_string(
        lab.path()
            .join(html_line.trim_start_matches("html:").trim()),
    )
    .unwrap();
    assert!(
        html.contains("<th>IOPS before</th><th>change</th>"),
        "headline columns"
    );
    let tr = html
        .split("<tr")
        .find(|t| t.contains("data-test=\"random 4KiB read, QD 32\""))
        .unwrap();
    assert!(
        tr.contains(&format!("data-value=\"{before}\"")),
        "{tr} lacks {before}"
    );
}

#[test]
fn help_teaches() {
    let lab = Lab::new();
    let (out, _) = text(&lab.run(&["--help"]));
    assert!(
        out.contains("storlab brief --quick") && out.contains("study file"),
        "{out}"
    );
    let (targets, _) = text(&lab.run(&["targets"]));
    assert!(
        targets.contains("io-uring") && targets.contains("null"),
        "{targets}"
    );
}

/// Every study in `studies/` (the reference briefs at full scale) is valid as written:
/// `storlab check` with documentation addresses (192.0.2.0/24) and device names for the
/// servers and members the studies read from the environment. The studies that need servers
/// are run in quick mode by their own tests (fileserver, raid), the rest by theirs or not at
/// all in CI (elastic-failover needs the HCI cluster that tests/elastic.rs starts); this one
/// catches a study that no longer parses.
#[test]
fn every_study_in_studies_checks_valid() {
    let studies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies");
    let mut n = 0;
    for e in std::fs::read_dir(&studies).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        n += 1;
        let lab = Lab::new();
        let mut cmd = lab.cmd();
        // From the checkout: a study names its YCSB workload files relative to it.
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("STORLAB_NFS_SERVER", "nfs://192.0.2.1")
            .env("STORLAB_SMB_SERVER", "smb://user:pw@192.0.2.1")
            .env(
                "STORLAB_PG_CLUSTER_URL",
                "postgresql://user@192.0.2.1:5432,192.0.2.2:5432/postgres?target_session_attrs=read-write",
            )
            .env("STORLAB_CLUSTER_SCRIPT", "scripts/cluster.sh")
            .env("STORLAB_CLUSTER_DIR", "/tmp/storlab-cluster-none")
            .env("STORLAB_HCI_SCRIPT", "scripts/hci.sh")
            .env("STORLAB_HCI_DIR", "/tmp/storlab-hci-none")
            .env("STORLAB_RAID_FAIL", "/dev/null")
            .env("STORLAB_RAID_MNT", "/mnt/storlab-none")
            .env("STORLAB_RAID_SPARE", "/dev/loop98")
            .env("STORLAB_RAID_FAIL2", "/dev/null")
            .env("STORLAB_RAID_SPARE2", "/dev/loop97")
            .env("STORLAB_HA_SERVER", "nfs://192.0.2.1")
            .env("STORLAB_HA_SCRIPT", "scripts/pacemaker.sh")
            .env("STORLAB_HA_DIR", "/tmp/storlab-ha-none")
            .env("STORLAB_HA_NODE_CACHE", "/usr/local/bin/storlab")
            .env(
                "STORLAB_REDIS_CLUSTER_URLS",
                "redis://192.0.2.1:7000,redis://192.0.2.2:7000",
            )
            .env("STORLAB_REDIS_CLUSTER_NODE1_NETNS", "storlab-none")
            .env("STORLAB_REDIS_CLUSTER_SCRIPT", "scripts/rediscluster.sh")
            .env("STORLAB_REDIS_CLUSTER_DIR", "/tmp/storlab-redis-none");
        for m in 0..8 {
            cmd.env(format!("STORLAB_RAID_M{m}"), format!("/dev/loop9{m}"));
        }
        // Tenants 1-4 (elastic-failover), 1-20 (elastic-failover-20).
        for t in 1..=20 {
            let port = 5500 + t;
            cmd.env(
                format!("STORLAB_HCI_URL_T{t}"),
                format!("postgresql://user@192.0.2.1:{port},192.0.2.2:{port}/ycsb?target_session_attrs=read-write"),
            );
        }
        let o = cmd
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success(), "{}: {out}{err}", path.display());
        assert!(
            format!("{out}{err}").contains(": valid"),
            "{}: {out}{err}",
            path.display()
        );
    }
    assert!(
        n >= 5,
        "expected the reference studies in {}",
        studies.display()
    );
}

/// The CPUs this test process may run on, from /proc/self/status (`Cpus_allowed_list`).
fn allowed_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    storlab_model::cpus::CpuList::parse(list)
        .unwrap()
        .cpus()
        .to_vec()
}

/// A block workload's `cpus` pins its worker threads, each once as it starts, and each
/// worker's CPUs as the kernel reported them once pinned are stored with its results:
/// `shared`, the whole list for every worker; `split`, one CPU each, round robin over the
/// workload's threads in the run, target after target.
#[test]
fn cpus_pin_each_worker_and_the_pinning_is_stored() {
    let allowed = allowed_cpus();
    let (a, b) = (allowed[0], allowed[allowed.len().min(2) - 1]);
    let lab = Lab::new();
    let study = lab.write(
        "pin.toml",
        &format!(
            r#"name = "pin"

[targets.one]
type = "null"

[targets.two]
type = "null"

[workloads.shared]
block-size = "4KiB"
threads = 2
cpus = "{a}"

[workloads.split]
block-size = "4KiB"
threads = 3
cpus = "{a},{b}"
cpus-policy = "split"

[[steps]]
workload = "shared"
targets = ["one"]
ops = 3000

[[steps]]
workload = "split"
targets = ["one", "two"]
together = true
ops = 3000
"#
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let runs = json_runs(&stdout);
    assert_eq!(runs.len(), 2, "{stdout}");
    let pinned = |run: &Value, t: usize| -> Vec<String> {
        run["targets"][t]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["pinned-cpus"].as_str().unwrap_or("none").to_string())
            .collect()
    };
    // Shared: both workers on the list, and said so with what the session used.
    assert_eq!(
        pinned(&runs[0], 0),
        [a.to_string(), a.to_string()],
        "{stdout}"
    );
    assert_eq!(
        runs[0]["targets"][0]["session-used"]["pinned-cpus"],
        format!("{a} (all 2 workers)")
    );
    assert_eq!(runs[0]["targets"][0]["kinds"]["read"]["ops"], 3000);
    // Split: one CPU each, dealt over one's three threads then two's.
    let (a, b) = (a.to_string(), b.to_string());
    assert_eq!(pinned(&runs[1], 0), [a.as_str(), &b, &a], "{stdout}");
    assert_eq!(pinned(&runs[1], 1), [b.as_str(), &a, &b], "{stdout}");
    if a != b {
        assert_eq!(
            runs[1]["targets"][0]["session-used"]["pinned-cpus"],
            format!("worker 1: {a}, worker 2: {b}, worker 3: {a}")
        );
    }
}
