//! The cluster brief end to end (issues 13 and 40): `studies/elastic-failover.toml` in quick
//! mode on the HCI cluster of `scripts/hci.sh` (4 nodes bounded in CPU, memory and disk; 4
//! tenants, each a Patroni cluster with its primary and replica on two nodes, the fourth node
//! empty at the start), its five steps apart. The elasticity runs, unbalanced, balanced by the
//! policy script, then by real Pacemaker and Corosync in every node (from the same placement):
//! 40 constant sessions (closed loop) running pgbench TPC-B-like transactions, shared by the
//! tenants after the `hci-elastic` shape (6 s phases) after a one-phase ramp-up; checked:
//! every phase has its 40 sessions split as the shares say, every tenant does work, the
//! reported throughput and moving averages are measured, the balancer is set per step (its
//! policy never fails; Pacemaker comes up in every node, manages the tenants from their own
//! placement and moves a tenant off the node that holds two busy ones), and the HTML draws the
//! runs as the brief's Figure 4. The
//! data-accessibility runs: node1, then node2 (databases twice as large), lost with their
//! data two phases in; checked: the loss is on the timeline with what the node hosted, the
//! run goes on through it (recovery times in the results), every tenant is fully redundant
//! again with the lost members' data copied back (bytes and rate in the wait's output, more
//! bytes for the larger databases); the report marks the loss and puts the brief's figures
//! beside the measured ones of their steps. Every run samples each node's CPU use and disk
//! rates (`hci.sh watch`), drawn under the throughput chart, and records the placement
//! daemon's copies as spans with their bytes. No acknowledged transaction is lost in any run.
//! A screenshot of the report is saved as a test artifact (`<target dir>/artifacts/elastic.png`).
//!
//! Needs root and the cluster's packages (`scripts/hci.sh install`; STORLAB_HCI_SCRIPT names
//! the script): skipped with the reason printed without them, failing when
//! STORLAB_REQUIRE_SERVERS / STORLAB_REQUIRE_ROOT is set. Each run loses two nodes, so the
//! test starts a cluster of its own under a temporary directory and stops it at the end.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Lab, text};

/// The `export NAME='VALUE'` lines of a cluster's env.sh.
fn cluster_env(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

/// The HCI cluster started under a temporary directory, stopped when dropped.
struct Hci {
    script: String,
    dir: tempfile::TempDir,
}

impl Hci {
    fn start(script: String) -> Hci {
        // Short: PostgreSQL's unix socket paths live under it.
        let dir = tempfile::Builder::new()
            .prefix("slhci")
            .tempdir_in("/tmp")
            .unwrap();
        let out = Command::new(&script)
            .args(["start", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        let hci = Hci { script, dir };
        assert!(out.status.success(), "hci.sh start: {:?}", text(&out));
        hci
    }
}

impl Drop for Hci {
    fn drop(&mut self) {
        let out = Command::new(&self.script)
            .args(["stop", self.dir.path().to_str().unwrap()])
            .output();
        match out {
            Ok(o) if !o.status.success() => eprintln!("hci.sh stop: {:?}", text(&o)),
            Err(e) => eprintln!("hci.sh stop: {e}"),
            _ => {}
        }
    }
}

/// The bytes a `full-redundancy` wait's output says were copied.
fn copied_bytes(wait: &serde_json::Value) -> u64 {
    let out = wait["stdout"].as_str().unwrap_or_default();
    out.split("copied ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no bytes copied in {wait}"))
}

#[test]
fn the_elastic_failover_study_keeps_its_shares_survives_node_losses_and_loses_nothing() {
    let Some(script) = common::server("STORLAB_HCI_SCRIPT") else {
        return;
    };
    if !common::root_or_skip("the HCI cluster's namespaces, cgroups and disks") {
        return;
    }
    let hci = Hci::start(script);
    let env = cluster_env(&hci.dir.path().join("env.sh"));
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/elastic-failover.toml");
    let lab = Lab::new();
    let out = lab
        .cmd()
        .args(["run", "--quick", study.to_str().unwrap()])
        .envs(env)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let folder = lab.study_folder();
    let summary = |run: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(folder.join(run).join("summary.json")).unwrap(),
        )
        .unwrap()
    };
    let runs: Vec<serde_json::Value> = (1..=5).map(|i| summary(&format!("run-{i:03}"))).collect();
    let steps: Vec<&str> = runs.iter().map(|r| r["step"].as_str().unwrap()).collect();
    assert_eq!(
        steps,
        [
            "elasticity-unbalanced",
            "elasticity-balanced",
            "elasticity-pacemaker",
            "data-accessibility",
            "data-accessibility-2x"
        ]
    );
    let event = |run: &serde_json::Value, name: &str| -> serde_json::Value {
        run["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("the event {name}: {}", run["events"]))
            .clone()
    };

    // The elasticity runs: 40 sessions in every phase, each tenant its share of them, after a
    // one-phase ramp-up; no failure; the throughput measured, not asked; the balancer set.
    let mut elastic = Vec::new();
    for (e, balancer) in runs[..3].iter().zip(["none", "script", "pacemaker"]) {
        assert_eq!(e["warmup-seconds"].as_f64(), Some(6.0), "one phase");
        let set = event(e, "balancer");
        assert_eq!(set["status"], "ok", "{set}");
        assert!(
            set["stderr"]
                .as_str()
                .unwrap()
                .contains(&format!("balancer: {balancer}")),
            "{set}"
        );
        let schedule = &e["schedule"];
        assert_eq!(schedule["shape"], "hci-elastic");
        assert_eq!(schedule["total-workers"], 40, "{schedule}");
        let phases = schedule["phases"].as_array().unwrap();
        assert_eq!(phases.len(), 10, "{schedule}");
        for p in phases {
            let groups = p["groups"].as_array().unwrap();
            let sessions: u64 = groups
                .iter()
                .map(|g| g["scheduled-workers"].as_u64().unwrap())
                .sum();
            assert_eq!(sessions, 40, "phase {}: {p}", p["phase"]);
            for g in groups {
                let asked = g["scheduled-share"].as_f64().unwrap() * 40.0;
                assert_eq!(g["scheduled-workers"].as_f64(), Some(asked), "{g}");
            }
        }
        let reported = schedule["reported-rate-ops"].as_f64().unwrap();
        assert!(reported > 0.0, "{schedule}");
        for m in schedule["moving-averages"].as_array().unwrap() {
            assert!(m["windows"].as_u64().unwrap() > 0, "{m}");
            assert!(m["max-deviation"].as_f64().is_some(), "{m}");
        }
        elastic.push(format!(
            "{}: reported {reported:.1} tps, moving averages {}",
            e["step"], schedule["moving-averages"]
        ));
    }
    // Every run: each live node's CPU use and disk rates, sampled through the step.
    for r in &runs {
        for series in ["node3.cpu", "node3.disk-write", "node4.cpu"] {
            let sampled = &r["samples"][series];
            assert!(
                sampled["count"].as_u64().unwrap_or(0) > 0,
                "{series}: {}",
                r["samples"]
            );
        }
        assert_eq!(r["samples"]["node3.cpu"]["unit"], "cpus");
    }
    let placement = std::fs::read_to_string(hci.dir.path().join("placement.log")).unwrap();
    assert!(!placement.contains("policy: exit"), "{placement}");
    // Pacemaker: up in every node, the tenants back where they started and then managed by
    // it; node1's two busy primaries are more than a node holds, so it moves one (a span).
    let pcmk = &runs[2];
    for (name, says) in [
        ("initial-placement", ""),
        ("balancer", "Pacemaker up in node1 node2 node3 node4"),
    ] {
        let e = event(pcmk, name);
        assert_eq!(e["status"], "ok", "{e}");
        assert!(e["stderr"].as_str().unwrap().contains(says), "{e}");
    }
    assert!(
        placement.contains("pacemaker: the tenants are managed"),
        "{placement}"
    );
    let moves: Vec<String> = pcmk["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "reported" && e["name"].as_str().unwrap().starts_with("move-t"))
        .map(|e| format!("{} ({} s)", e["name"], e["duration-seconds"]))
        .collect();
    assert!(!moves.is_empty(), "Pacemaker moved nothing: {placement}");
    elastic.push(format!("Pacemaker's moves: {}", moves.join(", ")));

    // The data-accessibility runs: the node lost with what it hosted, the run going on
    // through it, every tenant redundant again with the lost members' data copied back.
    let mut access = Vec::new();
    let mut copied = Vec::new();
    for (s, node) in runs[3..].iter().zip(["node1", "node2"]) {
        let lost = event(s, &format!("{node}-lost"));
        assert_eq!(lost["status"], "ok", "{lost}");
        assert!(
            lost["stdout"]
                .as_str()
                .unwrap()
                .contains(&format!("{node} hosted: t")),
            "{lost}"
        );
        let loss_s = lost["start-ns"].as_i64().unwrap() as f64 / 1e9;
        assert!((11.0..13.0).contains(&loss_s), "two phases in: {loss_s}");
        let rec = &s["recovery"][0];
        assert_eq!(rec["event"], format!("{node}-lost"), "{rec}");
        assert!(rec["baseline-rate-ops"].as_f64().unwrap() > 0.0, "{rec}");
        // Within the step's 36 s: the sliver after it, sessions finishing, is no outage.
        if let Some(end) = rec["outage-end-seconds"].as_f64() {
            assert!(end <= 36.0 + 1e-6, "{rec}");
        }
        assert!(
            rec["time-to-first-success-seconds"].as_f64().is_some(),
            "{rec}"
        );
        let redundant = event(s, "full-redundancy");
        assert_eq!(redundant["status"], "ok", "{redundant}");
        let redundant_s = redundant["duration-seconds"].as_f64().unwrap();
        assert!(redundant_s > 0.0, "{redundant}");
        copied.push(copied_bytes(&redundant));
        // Each lost member copied back is a span of the placement daemon, with its bytes.
        let resyncs: Vec<&serde_json::Value> = s["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["kind"] == "reported" && e["name"].as_str().unwrap().starts_with("resync-t")
            })
            .collect();
        assert!(!resyncs.is_empty(), "{}", s["events"]);
        for r in &resyncs {
            assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
            assert!(r["duration-seconds"].as_f64().unwrap() > 0.0, "{r}");
        }
        assert_eq!(s["schedule"]["phases"].as_array().unwrap().len(), 6);
        access.push(format!(
            "{}: {} at {loss_s:.2} s: outage {} s, first success after {} s, recovered after {} s, fully redundant after {redundant_s:.2} s ({})",
            s["step"],
            lost["stdout"].as_str().unwrap().trim(),
            rec["outage-seconds"],
            rec["time-to-first-success-seconds"],
            rec["time-to-recover-seconds"],
            redundant["stdout"].as_str().unwrap().trim(),
        ));
    }
    assert!(
        copied[1] > copied[0],
        "twice the database, more bytes copied: {copied:?}"
    );

    // Every acknowledged transaction's ledger row is there, in every run.
    let mut acknowledged = 0;
    for t in runs.iter().flat_map(|r| r["targets"].as_array().unwrap()) {
        let v = &t["verify"];
        for class in ["lost", "missing", "corrupt", "unreadable"] {
            if let Some(n) = v[class]["keys"].as_u64() {
                assert_eq!(n, 0, "{}: {class}: {v}", t["name"]);
            }
        }
        acknowledged += v["intact"]["keys"]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: {v}", t["name"]));
    }
    assert!(acknowledged > 3000, "{acknowledged} acknowledged");

    // The report: the elasticity runs drawn as the brief's Figure 4 (the ramp-up, then the
    // measurement interval), the tenants stacked; the data-accessibility runs with the loss
    // marked; the brief's figures beside the measured, each of its step.
    let page = lab.path().join("elastic.html");
    let report = lab.run(&[
        "report",
        folder.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(report.status.success(), "{:?}", text(&report));
    let html = std::fs::read_to_string(&page).unwrap();
    common::shot::first_screen(&page, "brief-elastic-failover");
    let chart = |id: &str| -> String {
        html.split(&format!("id=\"{id}\""))
            .nth(1)
            .unwrap_or_else(|| panic!("the chart {id}"))
            .split("</svg>")
            .next()
            .unwrap()
            .to_string()
    };
    for run in 1..=3 {
        assert_eq!(
            chart(&format!("schedule-groups-{run}"))
                .matches("class=\"band\"")
                .count(),
            4
        );
        let ramp = chart(&format!("schedule-total-{run}"));
        assert!(ramp.contains("ramp-up (6 s"), "the ramp-up shaded");
        assert!(ramp.contains("measurement interval (60 s)"), "{ramp}");
    }
    assert!(
        chart("schedule-total-4").contains("node1-lost (exec)"),
        "the loss marked"
    );
    assert!(
        chart("schedule-total-5").contains("node2-lost (exec)"),
        "the loss marked"
    );
    assert!(html.contains("moving average over 5 phases (30 s): largest deviation"));
    assert!(html.contains("samples in cpus") && html.contains("samples in bytes/s"));
    // The per-node view under each run's Figure 4/5 chart too, on its time axis.
    for run in 1..=5 {
        assert!(
            html.contains(&format!("id=\"schedule-samples-{run}-1\"")),
            "run {run}: the nodes' CPU under the total chart"
        );
    }
    let published = html
        .split("Published figures")
        .nth(1)
        .expect("the brief's figures");
    for (test, metric) in [
        ("elasticity-balanced", "reported throughput"),
        (
            "elasticity-balanced",
            "max deviation, 1-phase moving average",
        ),
        (
            "elasticity-balanced",
            "max deviation, 5-phase moving average",
        ),
        ("data-accessibility", "time to full redundancy"),
    ] {
        let row = published
            .split("<tr")
            .find(|r| r.contains(&format!("{test} (Elastic)")) && r.contains(metric))
            .unwrap_or_else(|| panic!("{test} {metric}: {published}"));
        assert!(!row.contains("not measured here"), "{test} {metric}: {row}");
    }

    // A screenshot for the note, when Chromium is there (the browser test requires it).
    if Path::new("/usr/bin/chromium").exists() {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .unwrap()
            .join("artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let profile = tempfile::tempdir().unwrap();
        let shot = Command::new("/usr/bin/chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1280,2600",
                &format!("--user-data-dir={}", profile.path().display()),
                &format!("--screenshot={}", dir.join("elastic.png").display()),
                &format!("file://{}", page.display()),
            ])
            .output()
            .unwrap();
        assert!(shot.status.success(), "{:?}", text(&shot));
    }
    eprintln!(
        "{}; {}; {acknowledged} transactions acknowledged, none lost",
        elastic.join("; "),
        access.join("; ")
    );
}
