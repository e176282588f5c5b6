//! The cluster brief on the second cluster (issue 13): `studies/elastic-failover-redis.toml` in
//! quick mode against the Redis Cluster of `scripts/rediscluster.sh` (3 masters, 3 replicas,
//! each node in its own network namespace). Four tenant groups of YCSB inserts share a
//! constant 1,000 inserts/s after the `hci-elastic` shape (6 s phases) and master node1 is
//! powered off halfway. Checked: before the loss each group's measured share per phase is
//! within 0.05 of the schedule and each phase's total within 5% of its target; the power-off
//! is on the timeline with its processes killed; the recovery figures are there (outage, time
//! to the first success, time until throughput is back within 5%); the cluster serves every
//! slot again (the replica promoted); and the lost-writes figures are there and consistent:
//! every acknowledged insert was checked and lost <= acknowledged. Redis Cluster replicates
//! asynchronously, so lost writes may be found: their count is printed, a finding and not a
//! failure.
//!
//! Needs root and the cluster (`scripts/rediscluster.sh start DIR; . DIR/env.sh`): skipped with
//! the reason printed without them, failing when STORLAB_REQUIRE_SERVERS / STORLAB_REQUIRE_ROOT
//! is set. The run powers node1 off and this is the only test of that cluster, so it runs once
//! per cluster start.

mod common;

use std::path::Path;

use common::{Lab, text};

#[test]
fn a_master_powered_off_under_elastic_load_is_survived_and_lost_writes_are_counted() {
    if common::server("STORLAB_REDIS_CLUSTER_URLS").is_none() {
        return;
    }
    if !common::root_or_skip("powering a node's network namespace off") {
        return;
    }
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/elastic-failover-redis.toml");
    let lab = Lab::new();
    let out = lab.run(&["run", "--quick", study.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("lost writes") || stderr.contains("lost writes"),
        "the terminal shows the lost writes: {stdout}"
    );
    let folder = lab.study_folder();
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("run-001/summary.json")).unwrap(),
    )
    .unwrap();

    // The loss on the timeline, processes killed.
    let events = s["events"].as_array().unwrap();
    let lost = events
        .iter()
        .find(|e| e["name"] == "master-lost")
        .expect("the master-lost event");
    assert_eq!(lost["status"], "ok", "{lost}");
    assert_eq!(lost["kind"], "power-off", "{lost}");
    assert!(lost["pids-killed"].as_u64().unwrap() >= 1, "{lost}");
    let loss_s = lost["start-ns"].as_i64().unwrap() as f64 / 1e9;
    assert!(
        (29.0..31.0).contains(&loss_s),
        "halfway through 60 s: {loss_s}"
    );
    let serving = events
        .iter()
        .find(|e| e["name"] == "serving-again")
        .expect("the serving-again event");
    assert_eq!(serving["status"], "ok", "the replica took over: {serving}");

    // Recovery figures.
    let rec = &s["recovery"][0];
    assert_eq!(rec["event"], "master-lost", "{rec}");
    // One master of three is lost: inserts whose keys live on the other two may still
    // succeed in an interval, so a whole interval without a success (an outage) is not
    // certain; a deep dip is. Seen in one full run: no outage, the dip at 10 against a
    // baseline of 1,000 ops/s.
    let outage = rec["outage-seconds"].as_f64().unwrap();
    assert!(outage >= 0.0, "{rec}");
    let (baseline, dip) = (
        rec["baseline-rate-ops"].as_f64().unwrap(),
        rec["dip-min-rate-ops"].as_f64().unwrap(),
    );
    assert!(dip < 0.5 * baseline, "no dip after the loss: {rec}");
    let first = rec["time-to-first-success-seconds"].as_f64();
    assert!(first.is_some(), "{rec}");
    let back = rec["time-to-recover-seconds"].as_f64();
    assert!(back.is_some(), "throughput back within 5%: {rec}");

    // Before the loss: every phase on its shares and its total.
    let schedule = &s["schedule"];
    assert_eq!(schedule["shape"], "hci-elastic");
    let phases = schedule["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 10, "{schedule}");
    let before: Vec<&serde_json::Value> = phases
        .iter()
        .filter(|p| p["to-seconds"].as_f64().unwrap() <= loss_s + 1e-6)
        .collect();
    assert!(before.len() >= 4, "{} phases before the loss", before.len());
    for p in &before {
        let of_target = p["rate-of-target"].as_f64().unwrap();
        assert!((of_target - 1.0).abs() <= 0.05, "phase total: {p}");
        for g in p["groups"].as_array().unwrap() {
            let (asked, got) = (
                g["scheduled-share"].as_f64().unwrap(),
                g["share"].as_f64().unwrap(),
            );
            assert!((got - asked).abs() <= 0.05, "phase {}: {g}", p["phase"]);
        }
    }

    // Errors during the outage were counted per class, not a crash.
    let mut errors = 0;
    for t in s["targets"].as_array().unwrap() {
        errors += t["errors"].as_u64().unwrap();
    }
    assert!(errors > 0, "the outage cost no operation");

    // Lost writes: every acknowledged insert checked; lost ones counted, never more than
    // acknowledged.
    let (mut acknowledged, mut lost_writes) = (0, 0);
    for t in s["targets"].as_array().unwrap() {
        let v = &t["verify"];
        assert_eq!(v["kind"], "key-value", "{v}");
        let n = |k: &str| {
            v[k].as_u64()
                .unwrap_or_else(|| panic!("{}: {k}: {v}", t["name"]))
        };
        let keys = |c: &str| {
            v[c]["keys"]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: {c}: {v}", t["name"]))
        };
        assert_eq!(n("keys-checked"), n("keys-acknowledged"), "{v}");
        assert!(n("keys-acknowledged") > 0, "{v}");
        let lost = keys("lost") + keys("missing");
        assert!(lost <= n("keys-acknowledged"), "{v}");
        assert_eq!(keys("corrupt"), 0, "{v}");
        assert_eq!(keys("unreadable"), 0, "{v}");
        assert_eq!(
            keys("intact") + lost,
            n("keys-checked"),
            "every checked key intact or lost: {v}"
        );
        acknowledged += n("keys-acknowledged");
        lost_writes += lost;
    }
    assert!(acknowledged > 20_000, "{acknowledged} acknowledged");

    // The Markdown report shows them.
    let md = lab.path().join("r.md");
    let report = lab.run(&[
        "report",
        folder.to_str().unwrap(),
        "-o",
        md.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{:?}", text(&report));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("keys acknowledged") && md.contains("lost writes"),
        "{md}"
    );

    eprintln!(
        "master node1 lost at {loss_s:.2} s: outage {outage:.2} s, first success after {:.2} s, back within 5% after {:.2} s, all slots served again after {} s; {errors} errors; {acknowledged} inserts acknowledged, {lost_writes} lost",
        first.unwrap(),
        back.unwrap(),
        serving["duration-seconds"]
    );
}

/// The study names the node it powers off through the cluster's environment
/// (`STORLAB_REDIS_CLUSTER_NODE1_NETNS`): a node the cluster does not have is refused by
/// `storlab check` with the file, line and key. Needs no cluster: the variables are set here.
#[test]
fn check_refuses_a_power_off_of_a_node_not_in_the_cluster() {
    let text_of = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/elastic-failover-redis.toml"),
    )
    .unwrap();
    let lab = Lab::new();
    let good = lab.write("good.toml", &text_of);
    let bad = lab.write("bad.toml", &text_of.replace("NODE1_NETNS", "NODE9_NETNS"));
    let line = text_of
        .lines()
        .position(|l| l.contains("NODE1_NETNS}"))
        .unwrap()
        + 1;
    let check = |path: &Path| {
        lab.cmd()
            .args(["check", path.to_str().unwrap()])
            .env("STORLAB_REDIS_CLUSTER_URLS", "10.0.0.1:6379,10.0.0.2:6379")
            .env("STORLAB_REDIS_CLUSTER_NODE1_NETNS", "slr-test-node1")
            .env_remove("STORLAB_REDIS_CLUSTER_NODE9_NETNS")
            .env("STORLAB_REDIS_CLUSTER_SCRIPT", "/bin/true")
            .env("STORLAB_REDIS_CLUSTER_DIR", "/nonexistent")
            .output()
            .unwrap()
    };
    let out = check(&good);
    assert!(out.status.success(), "{:?}", text(&out));
    let out = check(&bad);
    assert!(!out.status.success());
    let (stdout, stderr) = text(&out);
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains(&format!("bad.toml:{line}:"))
            && all.contains("steps[1].events[1].netns")
            && all.contains("STORLAB_REDIS_CLUSTER_NODE9_NETNS is not set"),
        "{all}"
    );
}
