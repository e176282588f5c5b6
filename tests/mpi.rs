//! Distributed runs under OpenMPI's mpirun, 4 ranks on this machine, on the null target: the
//! merged histograms are the ranks' added exactly, their percentiles those of one histogram
//! fed every value, per-rank and per-host tables are stored and reported, and a rank killed
//! mid-run leaves a partial result that names it. Needs the `mpi` feature and mpirun
//! (scripts/setup.sh installs OpenMPI and builds with the feature): without them the tests
//! are skipped, or fail when STORLAB_REQUIRE_SERVERS or STORLAB_REQUIRE_ROOT is set.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use common::Lab;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

/// mpirun's path, or None (skipping) when this build or machine cannot run MPI.
pub fn mpirun_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("mpirun"))
            .find(|p| p.is_file())
    });
    let missing = match (&found, cfg!(feature = "mpi")) {
        (Some(_), true) => return found,
        (None, _) => "mpirun is not installed (scripts/setup.sh installs openmpi-bin)",
        (Some(_), false) => "storlab is built without the `mpi` feature (--features mpi)",
    };
    assert!(
        std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none()
            && std::env::var_os("STORLAB_REQUIRE_ROOT").is_none(),
        "{missing}, and STORLAB_REQUIRE_SERVERS or STORLAB_REQUIRE_ROOT is set"
    );
    eprintln!("SKIPPED: {missing}");
    None
}

/// `mpirun -np N` running storlab with `args` in the lab.
pub fn mpirun(lab: &Lab, mpirun: &Path, n: u32, extra: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new(mpirun);
    c.current_dir(lab.path())
        // A hang fails the test instead of holding it forever.
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--timeout",
            "120",
            "-np",
        ])
        .arg(n.to_string())
        .args(extra)
        .args(["-x", "STORLAB_RESULTS"])
        .arg(common::bin())
        .args(args)
        .env("STORLAB_RESULTS", lab.results());
    c
}

const STUDY: &str = r#"
name = "mpi-null"
[targets.null]
type = "null"
[workloads.w]
access = "random"
block-size = "4KiB"
threads = 8
rate-ops = 20000
[[steps]]
workload = "w"
targets = ["null"]
warmup = "0.5s"
duration = "DURATION"
"#;

fn decode(b64: &str) -> Histogram<u64> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(raw))
        .expect("histogram")
}

/// Every histogram of an interval log, added per tag.
fn hlog_by_tag(path: &Path) -> BTreeMap<String, Histogram<u64>> {
    let bytes = std::fs::read(path).expect("interval log");
    let mut out: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for e in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(iv) = e.expect("log entry") else {
            continue;
        };
        let tag = iv.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
        let h = decode(iv.encoded_histogram());
        match out.get_mut(&tag) {
            Some(sum) => sum.add(&h).expect("add"),
            None => {
                out.insert(tag, h);
            }
        }
    }
    out
}

fn counts(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn run_folder(lab: &Lab) -> PathBuf {
    lab.study_folder().join("run-001")
}

#[test]
fn merged_histograms_are_the_ranks_added_exactly() {
    let Some(mpi) = mpirun_or_skip() else { return };
    let lab = Lab::new();
    lab.write("s.toml", &STUDY.replace("DURATION", "2s"));
    let out = mpirun(&lab, &mpi, 4, &[], &["run", "s.toml"])
        .output()
        .expect("mpirun");
    let summary = check_merged_exactly(&lab, &out, 4);
    assert_eq!(
        summary["distributed"]["gather"]["levels"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The Markdown report shows the tables from the stored results.
    let md_path = lab.path().join("report.md");
    let report = lab.run(&[
        "report",
        lab.study_folder().to_str().unwrap(),
        "--format",
        "md",
        "-o",
        md_path.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{:?}", common::text(&report));
    let md = std::fs::read_to_string(&md_path).expect("the Markdown report");
    assert!(md.contains("| rank | host | workers |"), "{md}");
    assert!(md.contains("| host | ranks |"), "{md}");
}

/// 6 ranks: rank 1 has a child (rank 5) in the gather tree, so it merges rank 5's intervals
/// with its own before sending them on; the result is still every rank's counts added.
#[test]
fn a_tree_of_three_levels_still_merges_exactly() {
    let Some(mpi) = mpirun_or_skip() else { return };
    let lab = Lab::new();
    lab.write(
        "s.toml",
        &STUDY
            .replace("DURATION", "2s")
            .replace("threads = 8", "threads = 12"),
    );
    let out = mpirun(&lab, &mpi, 6, &[], &["run", "s.toml"])
        .output()
        .expect("mpirun");
    let summary = check_merged_exactly(&lab, &out, 6);
    let g = &summary["distributed"]["gather"];
    assert_eq!(g["fan-out"], 4);
    let levels = g["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 3, "{g:#}");
    assert_eq!(
        (levels[1]["ranks"].as_u64(), levels[2]["ranks"].as_u64()),
        (Some(4), Some(1))
    );
    // Rank 1 received rank 5's streams and added their histograms.
    assert!(
        levels[1]["histogram-merges-per-rank-per-second"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{g:#}"
    );
    assert!(
        levels[2]["bytes-sent-per-rank-per-second"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{g:#}"
    );
}

/// Checks a complete run of `n` ranks, 2 workers each: every rank's row, and the merged
/// histogram exactly the ranks' added. Returns the summary.
fn check_merged_exactly(lab: &Lab, out: &std::process::Output, n: usize) -> serde_json::Value {
    let (stdout, stderr) = common::text(out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The per-rank and per-host tables are printed once, by rank 0.
    assert_eq!(stdout.matches("| rank | host |").count(), 1, "{stdout}");
    let folder = run_folder(lab);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["status"], "complete", "{summary:#}");
    let d = &summary["distributed"];
    assert_eq!(d["ranks-total"], n);
    let ranks = d["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), n);
    let mut workers = Vec::new();
    let mut ops = 0u64;
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i as u64);
        assert_eq!(r["status"], "complete");
        let w: Vec<u64> = r["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_u64().unwrap())
            .collect();
        assert_eq!(w.len(), 2, "workers split evenly, 2 per rank: {r}");
        workers.extend(w);
        assert!(r["ops"].as_u64().unwrap() > 0, "{r}");
        ops += r["ops"].as_u64().unwrap();
        assert!(folder.join(format!("system-rank-{i}.json")).is_file());
        if i > 0 {
            assert!(r["bytes-sent"].as_u64().unwrap() > 0, "{r}");
        }
    }
    workers.sort();
    assert_eq!(workers, (0..2 * n as u64).collect::<Vec<u64>>());
    assert_eq!(ops, summary["total"]["ops"].as_u64().unwrap());
    assert_eq!(d["hosts"].as_array().unwrap().len(), 1);

    // The merged histogram (the run's interval log, every measured second added) holds
    // exactly the counts of the ranks' histograms added.
    let merged = hlog_by_tag(&folder.join("histograms.hlog"));
    let merged = &merged["null.read"];
    let per_rank = hlog_by_tag(&folder.join("ranks.hlog"));
    assert_eq!(per_rank.len(), n, "{:?}", per_rank.keys());
    let mut added: BTreeMap<u64, u64> = BTreeMap::new();
    let mut one = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    for (tag, h) in &per_rank {
        let r: usize = tag
            .strip_prefix("rank-")
            .and_then(|t| t.split('.').next())
            .and_then(|n| n.parse().ok())
            .expect("rank-N.target.op");
        assert_eq!(h.len(), ranks[r]["ops"].as_u64().unwrap(), "{tag}");
        for (v, n) in counts(h) {
            *added.entry(v).or_default() += n;
            // One histogram fed every value, one at a time.
            for _ in 0..n {
                one.record(v).unwrap();
            }
        }
    }
    assert_eq!(counts(merged), added.into_iter().collect::<Vec<_>>());
    assert_eq!(merged.len(), ops);
    for q in [50.0, 90.0, 99.0, 99.9, 99.99, 100.0] {
        assert_eq!(
            merged.value_at_quantile(q / 100.0),
            one.value_at_quantile(q / 100.0),
            "p{q}"
        );
    }
    let lat = &summary["total"]["service-latency"];
    assert_eq!(
        lat["p99-ns"].as_u64().unwrap(),
        one.value_at_percentile(99.0)
    );
    assert_eq!(lat["max-ns"].as_u64().unwrap(), one.max());
    summary
}

/// The pid of the rank `rank` among mpirun's children.
fn rank_pid(mpirun_pid: u32, rank: u32) -> Option<i32> {
    let children =
        std::fs::read_to_string(format!("/proc/{mpirun_pid}/task/{mpirun_pid}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .find(|p| {
            std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|kv| kv == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
            })
        })
}

#[test]
fn a_rank_killed_mid_run_gives_a_partial_result_naming_it() {
    kill_mid_run(4, 2);
}

/// Rank 5 of 6 sends its intervals to rank 1 in the gather tree, not to rank 0: rank 1
/// declares it lost and tells rank 0, with what it had received of it.
#[test]
fn a_rank_killed_below_another_is_named_by_its_parent() {
    kill_mid_run(6, 5);
}

/// Runs `n` ranks, kills rank `victim` once a second has been measured, and checks the
/// partial result names it, with what it sent.
fn kill_mid_run(n: u32, victim_rank: u32) {
    let Some(mpi) = mpirun_or_skip() else { return };
    let lab = Lab::new();
    lab.write("s.toml", &STUDY.replace("DURATION", "8s"));
    let child = mpirun(&lab, &mpi, n, &[], &["run", "s.toml", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun");
    // The victim, once the run has measured for a while.
    let t0 = Instant::now();
    let victim = loop {
        if let Some(p) = rank_pid(child.id(), victim_rank) {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "rank {victim_rank} never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let folder = loop {
        let study = std::fs::read_dir(lab.results())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir());
        if let Some(study) = study {
            let f = study.join("run-001");
            if f.join("timeline.csv").is_file()
                && std::fs::read_to_string(f.join("timeline.csv"))
                    .unwrap()
                    .lines()
                    .any(|l| l.starts_with("1,measure"))
            {
                break f;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no measured second");
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill has no memory preconditions; the pid is our mpirun's child.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let out = child.wait_with_output().expect("mpirun ends");
    let (stdout, stderr) = common::text(&out);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json"))
            .unwrap_or_else(|e| panic!("no summary ({e}):\n{stdout}\n{stderr}")),
    )
    .unwrap();
    assert_eq!(summary["status"], "partial", "{summary:#}");
    let ranks = summary["distributed"]["ranks"].as_array().unwrap();
    let v = victim_rank as usize;
    assert_eq!(ranks[v]["status"], "lost", "{summary:#}");
    assert!(ranks[v]["last-heard-seconds"].as_f64().unwrap() >= 1.0);
    let host = ranks[v]["host"].as_str().unwrap();
    let warning = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains(&format!("rank {victim_rank} on host")))
        .unwrap_or_else(|| panic!("no warning naming rank {victim_rank}: {summary:#}"));
    assert!(
        warning.contains(host) && warning.contains(&format!("pid {victim}")),
        "{warning}"
    );
    // What was gathered is kept: every rank measured something before the kill.
    for r in ranks {
        assert!(r["ops"].as_u64().unwrap() > 0, "{r}");
    }
    assert!(summary["total"]["ops"].as_u64().unwrap() > 0);
}

/// Network namespaces with a veth link each to this machine's own network; removed on drop.
struct Links {
    names: Vec<(String, String)>,
}

impl Links {
    fn ip(args: &[&str]) {
        let s = Command::new("ip").args(args).status().expect("ip");
        assert!(s.success(), "ip {}", args.join(" "));
    }

    /// Every IPv4 address (`ip -o` lines) on this machine and in every named namespace.
    fn all_addrs() -> String {
        let run = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        let mut all = run(&["-4", "-o", "addr", "show"]);
        for ns in run(&["netns", "list"]).lines() {
            if let Some(ns) = ns.split_whitespace().next() {
                all.push_str(&run(&["-n", ns, "-4", "-o", "addr", "show"]));
            }
        }
        all
    }

    /// N links on the first 10.N.0.0/16 (N in 200..250) that no link on this machine or in
    /// a namespace uses: the scripts' clusters and client LANs live on 10.213-10.215, and a
    /// collision sends the ranks' traffic to a bridge instead of their veth. Chosen under the
    /// scripts' lock (scripts/netns-lib.sh), held until the addresses are on their links.
    fn on_free_net(n: usize) -> (Links, u8) {
        let lock_path = std::env::var("STORLAB_NETNS_LOCK").unwrap_or_else(|_| {
            if Path::new("/run/lock").is_dir() {
                "/run/lock/storlab-netns.lock".into()
            } else {
                "/tmp/storlab-netns.lock".into()
            }
        });
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock_path)
            .unwrap_or_else(|e| panic!("{lock_path}: {e}"));
        // SAFETY: flock on a descriptor this function owns; released when `lock` drops.
        let held = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
        assert_eq!(held, 0, "flock {lock_path}");
        let addrs = Links::all_addrs();
        let net = (200..250u8)
            .find(|net| !addrs.contains(&format!(" 10.{net}.")))
            .unwrap_or_else(|| panic!("no free 10.N.0.0/16 for N in 200..250:\n{addrs}"));
        let links = Links::new(n, net);
        drop(lock);
        (links, net)
    }

    /// Namespace i gets 10.N.(i+1).2/24, this side of its link 10.N.(i+1).1.
    fn new(n: usize, net: u8) -> Links {
        let tag = std::process::id() % 100_000;
        let mut links = Links { names: Vec::new() };
        for i in 0..n {
            let (ns, veth) = (format!("slmpi{tag}-{i}"), format!("slm{tag}v{i}"));
            let peer = format!("{veth}p");
            links.names.push((ns.clone(), veth.clone()));
            let (here, there) = (
                format!("10.{net}.{}.1/24", i + 1),
                format!("10.{net}.{}.2/24", i + 1),
            );
            Links::ip(&["netns", "add", &ns]);
            Links::ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer]);
            Links::ip(&["link", "set", &peer, "netns", &ns]);
            Links::ip(&["addr", "add", &here, "dev", &veth]);
            Links::ip(&["link", "set", &veth, "up"]);
            Links::ip(&["-n", &ns, "addr", "add", &there, "dev", &peer]);
            Links::ip(&["-n", &ns, "link", "set", &peer, "up"]);
            Links::ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        links
    }

    fn rx_bytes(&self, i: usize) -> u64 {
        std::fs::read_to_string(format!(
            "/sys/class/net/{}/statistics/rx_bytes",
            self.names[i].1
        ))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0)
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        for (ns, veth) in &self.names {
            let _ = Command::new("ip").args(["link", "del", veth]).status();
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Four ranks as four hosts: each in a UTS namespace of its own with its own host name (so
/// MPI names four hosts), each driving a Redis server from its own network namespace over its
/// own veth link (its client pinned to its rank).
#[test]
fn ranks_as_hosts_in_network_namespaces_drive_redis_over_veth() {
    let Some(mpi) = mpirun_or_skip() else { return };
    if !common::root_or_skip("network namespaces and veth links") {
        return;
    }
    let have = |c: &str| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok()
    };
    if !have("redis-server") || !have("unshare") {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "redis-server or unshare is missing and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!("SKIPPED: redis-server or unshare is missing");
        return;
    }
    let (links, net) = Links::on_free_net(4);
    let port = 17000 + (std::process::id() % 1000) as u16;
    let lab = Lab::new();
    let binds: Vec<String> = (1..=4).map(|i| format!("10.{net}.{i}.1")).collect();
    let _redis = Child(
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind"])
            .args(&binds)
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
                "--dir",
            ])
            .arg(lab.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server"),
    );
    let t0 = Instant::now();
    while std::net::TcpStream::connect((binds[0].as_str(), port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut study = String::from("name = \"mpi-netns\"\n");
    for i in 0..4 {
        study.push_str(&format!(
            "[targets.redis{i}]\ntype = \"redis\"\nhost = \"10.{net}.{}.1\"\nport = {port}\nclient = \"client{i}\"\n[clients.client{i}]\nnetns = \"{}\"\nrank = {i}\n",
            i + 1,
            links.names[i].0
        ));
    }
    study.push_str(
        "[workloads.load]\ntype = \"ycsb\"\nphase = \"load\"\nrecord-count = 2000\nthreads = 2\n[[steps]]\nworkload = \"load\"\ntargets = [\"redis0\", \"redis1\", \"redis2\", \"redis3\"]\ntogether = true\n",
    );
    lab.write("s.toml", &study);
    // Each rank in a UTS namespace of its own, named as a host of its own.
    let wrapper = lab.write(
        "as-host.sh",
        "#!/bin/sh\nexec unshare --uts sh -c 'hostname \"storlab-host$OMPI_COMM_WORLD_RANK\"; exec \"$@\"' sh \"$@\"\n",
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let before: Vec<u64> = (0..4).map(|i| links.rx_bytes(i)).collect();
    let mut c = Command::new(&mpi);
    c.current_dir(lab.path())
        .args(["--allow-run-as-root", "--oversubscribe", "--timeout", "120"])
        .args(["-np", "4"])
        .args(["-x", "STORLAB_RESULTS"])
        .arg(&wrapper)
        .arg(common::bin())
        .args(["run", "s.toml", "-q"])
        .env("STORLAB_RESULTS", lab.results());
    let out = c.output().expect("mpirun");
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run_folder(&lab).join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["status"], "complete", "{summary:#}");
    let d = &summary["distributed"];
    let hosts: Vec<&str> = d["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(
        hosts,
        [
            "storlab-host0",
            "storlab-host1",
            "storlab-host2",
            "storlab-host3"
        ]
    );
    for (i, r) in d["ranks"].as_array().unwrap().iter().enumerate() {
        // Its client's two workers (targets' workers are numbered in target order).
        assert_eq!(r["workers"], serde_json::json!([2 * i, 2 * i + 1]), "{r}");
        assert_eq!(
            r["ops"], 2000,
            "rank {i} inserted every record of its target: {r}"
        );
        // Its traffic crossed its own link.
        let got = links.rx_bytes(i) - before[i];
        assert!(got > 2000 * 100, "link {i} carried {got} bytes");
        assert!(
            run_folder(&lab)
                .join(format!("system-rank-{i}.json"))
                .is_file()
        );
    }
    assert_eq!(summary["total"]["ops"], 8000);
}

/// Runs the study `text` under mpirun with `ranks` ranks (quiet) in a lab of its own; returns
/// its one run's summary (the run must succeed).
fn mpi_run_summary(mpi: &Path, ranks: u32, text: &str) -> serde_json::Value {
    let lab = Lab::new();
    lab.write("s.toml", text);
    let out = mpirun(&lab, mpi, ranks, &[], &["run", "s.toml", "-q"])
        .output()
        .expect("mpirun");
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    serde_json::from_str(&std::fs::read_to_string(run_folder(&lab).join("summary.json")).unwrap())
        .unwrap()
}

/// The stonewall: when the first rank has finished its operations every rank stops, and the
/// result says which rank and when.
#[test]
fn the_stonewall_is_recorded_with_the_first_rank_and_when() {
    let Some(mpi) = mpirun_or_skip() else { return };
    let summary = mpi_run_summary(
        &mpi,
        4,
        "name = \"mpi-stonewall\"\n[targets.null]\ntype = \"null\"\n[workloads.w]\nthreads = 8\nrate-ops = 8000\n[[steps]]\nworkload = \"w\"\ntargets = [\"null\"]\nops = 8000\nstonewall = true\n",
    );
    // Stopped by the operation count (its own or the stonewall's), not interrupted.
    assert_eq!(summary["status"], "complete", "{summary:#}");
    assert_eq!(summary["end-reason"], "ops", "{summary:#}");
    let wall = &summary["distributed"]["stonewall"];
    assert!(wall["first-rank"].as_u64().unwrap() < 4, "{summary:#}");
    // 1,000 operations per worker at 1,000 ops/s: the first rank is done after about 1 s.
    let at = wall["at-seconds"].as_f64().unwrap();
    assert!(at > 0.5 && at < 10.0, "{at}");
    assert!(
        summary["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "stonewall"),
        "{summary:#}"
    );
}

/// Steady state under mpirun: rank 0 judges it on every rank's merged intervals and stops
/// every rank, so the run ends long before its duration with each rank's share done (a rank
/// left running would hold the run to its 60 s and do far more operations than the others).
#[test]
fn steady_state_stops_every_rank() {
    let Some(mpi) = mpirun_or_skip() else { return };
    let summary = mpi_run_summary(
        &mpi,
        2,
        "name = \"mpi-steady\"\ninterval = \"100ms\"\n[targets.null]\ntype = \"null\"\n[workloads.w]\nthreads = 4\nrate-ops = 2000\n[[steps]]\nworkload = \"w\"\ntargets = [\"null\"]\nduration = \"60s\"\nsteady-state = \"iops:20%\"\nsteady-state-seconds = 1\nsteady-state-ramp-seconds = 0.2\n",
    );
    assert_eq!(summary["status"], "complete", "{summary:#}");
    assert_eq!(summary["end-reason"], "steady-state", "{summary:#}");
    let after = summary["steady-state"]["reached-after-seconds"]
        .as_f64()
        .unwrap();
    assert!(after < 30.0, "{summary:#}");
    let ranks = summary["distributed"]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    let ops: Vec<f64> = ranks.iter().map(|r| r["ops"].as_f64().unwrap()).collect();
    // Each rank ran 2 of the 4 workers at 500 ops/s each until the stop: about 1,000 ops/s
    // per rank for the same time, so their counts are close; the run's total is theirs.
    assert!(ops.iter().all(|&o| o > 0.0), "{ops:?}");
    assert!(ops[0] / ops[1] < 1.5 && ops[1] / ops[0] < 1.5, "{ops:?}");
    assert_eq!(
        summary["total"]["ops"].as_f64().unwrap(),
        ops.iter().sum::<f64>()
    );
    // Neither rank ran on to the 60 s limit: far fewer than 60 s of operations.
    assert!(ops.iter().sum::<f64>() < 2000.0 * 30.0, "{ops:?}");
}

/// A training workload under mpirun: accelerators split over the ranks, each with all its
/// readers, every rank's accelerators merged into one result (as DLIO's ranks are), and the
/// dataset written once though every rank prepares it.
#[test]
fn training_accelerators_spread_over_ranks_and_merge() {
    let Some(mpi) = mpirun_or_skip() else { return };
    let data = tempfile::tempdir().unwrap();
    let summary = mpi_run_summary(
        &mpi,
        2,
        &format!(
            "name = \"mpi-training\"\n[targets.data]\ntype = \"dataset\"\npath = \"{}\"\n[workloads.w]\ntype = \"training\"\npreset = \"cosmoflow-h100\"\nfiles = 16\nrecord-bytes = 10000\naccelerators = 4\nread-threads = 2\nepochs = 1\ncompute-time = \"2ms\"\n[[steps]]\nworkload = \"w\"\ntargets = [\"data\"]\nwarmup = \"0s\"\n",
            data.path().display()
        ),
    );
    let t = &summary["training"][0];
    let accs = t["per-accelerator"].as_array().unwrap();
    let ids: Vec<u64> = accs
        .iter()
        .map(|a| a["accelerator"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [0, 1, 2, 3], "{t}");
    for a in accs {
        assert_eq!(a["cut-short"], false, "{a}");
        assert_eq!(a["epochs"][0]["steps"], 4, "{a}");
    }
    assert_eq!(summary["targets"][0]["errors"], 0);
    assert_eq!(summary["total"]["ops"], 16);
    // One dataset, no leftover copies of a rank that lost the race.
    let names: Vec<String> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["cosmoflow"], "{names:?}");
}
