//! A rate schedule run by the real binary on the null target (no server needed): three tenant
//! groups whose shares rotate over three phases at a constant total, in quick mode (phases of
//! 1 s). Each group's measured share per phase is within 0.05 of the schedule's and each
//! phase's total within 5% of the target, the phase changes are on the timeline, and the
//! terminal report shows the table. A correctness test of the pacing, not a benchmark: the
//! rates are modest (3,000 operations per second in all) so that a loaded machine meets them.

mod common;

use common::{Lab, text};

const STUDY: &str = r#"name = "schedule"

[targets.a1]
type = "null"
[targets.a2]
type = "null"
[targets.b]
type = "null"
[targets.c]
type = "null"

[workloads.w]
block-size = "4KiB"
queue-depth = 2
threads = 2

[[steps]]
workload = "w"
targets = ["a1", "a2", "b", "c"]
together = true
warmup = "1s"
duration = "36m"
[steps.schedule]
total-rate-ops = 3000
phase = "12m"
[[steps.schedule.groups]]
name = "g1"
targets = ["a1", "a2"]
shares = [0.1, 0.3, 0.6]
[[steps.schedule.groups]]
name = "g2"
targets = ["b"]
shares = [0.3, 0.6, 0.1]
[[steps.schedule.groups]]
name = "g3"
targets = ["c"]
shares = [0.6, 0.1, 0.3]
"#;

/// The schedule's shares: per phase, per group.
const SHARES: [[f64; 3]; 3] = [[0.1, 0.3, 0.6], [0.3, 0.6, 0.1], [0.6, 0.1, 0.3]];

#[test]
fn each_group_gets_its_share_of_a_constant_total_in_every_phase() {
    let lab = Lab::new();
    let study = lab.write("s.toml", STUDY);
    let out = lab.run(&["run", "--quick", study.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("rate schedule (phases of 1 s"), "{stdout}");

    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("study folder");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("run-001/summary.json")).unwrap(),
    )
    .unwrap();
    let schedule = &summary["schedule"];
    assert_eq!(schedule["total-rate-ops"], 3000.0);
    let phases = schedule["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 3, "{schedule}");
    for (p, phase) in phases.iter().enumerate() {
        let rate = phase["rate-ops"].as_f64().unwrap();
        assert!(
            (rate / 3000.0 - 1.0).abs() <= 0.05,
            "phase {}: {rate} ops/s, target 3000",
            p + 1
        );
        let groups = phase["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 3);
        for (g, group) in groups.iter().enumerate() {
            let asked = group["scheduled-share"].as_f64().unwrap();
            assert_eq!(asked, SHARES[g][p], "phase {} group {}", p + 1, g + 1);
            let share = group["share"].as_f64().unwrap();
            assert!(
                (share - asked).abs() <= 0.05,
                "phase {} group {}: share {share}, scheduled {asked}",
                p + 1,
                g + 1
            );
            assert_eq!(group["errors"], 0);
        }
    }
    // The phase changes, on the timeline where the pacing changed the rates.
    let marks: Vec<f64> = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "schedule-phase")
        .map(|e| e["time-seconds"].as_f64().unwrap())
        .collect();
    assert_eq!(marks, vec![0.0, 1.0, 2.0]);
    // Open loop: latency from the intended start is recorded.
    assert!(
        summary["targets"][0]["kinds"]["read"]
            .get("intended-latency")
            .is_some(),
        "{}",
        summary["targets"][0]
    );
}
