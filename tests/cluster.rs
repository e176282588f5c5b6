//! A node lost under load, on a real replicated database: storlab inserts (YCSB load, verified)
//! into the three-node PostgreSQL 15 / Patroni cluster of `scripts/cluster.sh` through its
//! multi-host URL (`target_session_attrs=read-write` follows the leader), a `power-off` event
//! takes the leader's node down mid-run (its link, then SIGKILL of every process in its
//! namespace), the run goes on through the failover (errors counted, then successes again), a
//! `wait-for` on `scripts/cluster.sh redundant DIR` times the return to a leader with a
//! synchronous standby, and the verify pass after the run finds every acknowledged insert.
//!
//! Needs root and the cluster (`scripts/cluster.sh start DIR; . DIR/env.sh`): skipped with the
//! reason printed without them, failing instead when STORLAB_REQUIRE_SERVERS is set. The test
//! leaves the cluster running on its two other nodes (still redundant: leader and synchronous
//! standby), so it runs once per cluster start.

mod common;

use std::process::Command;

use common::{Lab, text};

fn summary(lab: &Lab) -> serde_json::Value {
    let study = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("study folder");
    let text = std::fs::read_to_string(study.join("run-001/summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_leader_powered_off_mid_run_loses_no_acknowledged_insert() {
    let Some(url) = common::server("STORLAB_PG_CLUSTER_URL") else {
        return;
    };
    if !common::root_or_skip("powering a node's network namespace off") {
        return;
    }
    let dir = std::env::var("STORLAB_CLUSTER_DIR").expect("STORLAB_CLUSTER_DIR (from env.sh)");
    let script =
        std::env::var("STORLAB_CLUSTER_SCRIPT").expect("STORLAB_CLUSTER_SCRIPT (from env.sh)");
    let leader = Command::new(&script)
        .args(["leader", &dir])
        .output()
        .unwrap();
    assert!(leader.status.success(), "{}", text(&leader).0);
    let leader = text(&leader).0.trim().to_string();
    let netns = std::env::var(format!(
        "STORLAB_PG_CLUSTER_{}_NETNS",
        leader.to_ascii_uppercase()
    ))
    .expect("the leader's namespace in env.sh");
    let table = format!("t{}", std::process::id());

    let lab = Lab::new();
    let study = format!(
        r#"name = "cluster-node-loss"
interval = "250ms"

[targets.pg]
type = "postgres"
url = "{url}"

[workloads.inserts]
type = "ycsb"
phase = "load"
table = "{table}"
record-count = 100000
field-count = 2
field-length = 100
threads = 2
rate-ops = 200
verify = true

[[steps]]
workload = "inserts"
targets = ["pg"]
duration = "40s"

[[steps.events]]
name = "leader-lost"
action = "power-off"
at = "6s"
netns = "{netns}"
baseline = "5s"

[[steps.events]]
name = "redundant-again"
action = "wait-for"
at = "6s"
command = ["{script}", "redundant", "{dir}"]
poll = "250ms"
timeout = "60s"
"#
    );
    let path = lab.write("cluster.toml", &study);
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let s = summary(&lab);

    let events: Vec<&serde_json::Value> = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("name").is_some())
        .collect();
    let off = events.iter().find(|e| e["name"] == "leader-lost").unwrap();
    assert_eq!(off["status"], "ok", "{off}");
    assert!(off["pids-killed"].as_u64().unwrap() >= 2, "{off}");
    let red = events
        .iter()
        .find(|e| e["name"] == "redundant-again")
        .unwrap();
    assert_eq!(red["status"], "ok", "{red}");

    // The run went on through the failover: errors while no leader answered, then successes.
    let t = &s["targets"][0];
    assert!(t["errors"].as_u64().unwrap() > 0, "no error counted: {t}");
    let rec = &s["recovery"][0];
    assert_eq!(rec["event"], "leader-lost", "{rec}");
    let outage = rec["outage-seconds"].as_f64().unwrap();
    let first = rec["time-to-first-success-seconds"].as_f64();
    assert!(outage > 0.0 && first.is_some(), "{rec}");

    // Every acknowledged insert is on the new leader.
    let v = &t["verify"];
    assert_eq!(v["kind"], "key-value", "{v}");
    let count = |class: &str| {
        v[class]["keys"]
            .as_u64()
            .unwrap_or_else(|| panic!("{class}: {v}"))
    };
    assert_eq!(count("intact"), v["keys-checked"].as_u64().unwrap(), "{v}");
    assert!(count("intact") > 1000, "{v}");
    for class in ["lost", "missing", "corrupt", "unreadable"] {
        assert_eq!(count(class), 0, "{class} keys: {v}");
    }
    eprintln!(
        "leader {leader} powered off at {:.2} s: write outage {outage:.2} s, first success after {:.2} s, throughput back within 5% after {:?} s, redundant again after {:.2} s; {} inserts acknowledged and intact, {} errors",
        off["start-ns"].as_i64().unwrap() as f64 / 1e9,
        first.unwrap(),
        rec["time-to-recover-seconds"].as_f64(),
        red["duration-seconds"].as_f64().unwrap(),
        count("intact"),
        t["errors"]
    );
}
