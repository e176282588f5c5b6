//! Steady state (`steady-state`, fio's `ss`) run by the real binary on the null target: an
//! open loop at a fixed rate reaches it and stops long before its duration, a complete run
//! whose summary says when and by how much; a criterion the run cannot meet runs to its
//! duration and says so. The tests read the stored results, never the clock.

mod common;

use common::{Lab, text};

fn study(criterion: &str, rate_ops: u32, duration: &str) -> String {
    format!(
        r#"name = "steady"
interval = "100ms"

[targets.n]
type = "null"

[workloads.w]
block-size = "4KiB"
queue-depth = 2
rate-ops = {rate_ops}

[[steps]]
workload = "w"
targets = ["n"]
duration = "{duration}"
steady-state = "{criterion}"
steady-state-seconds = 1
steady-state-ramp-seconds = 0.2
"#
    )
}

fn run(lab: &Lab, text_: &str) -> (serde_json::Value, String) {
    let path = lab.write("s.toml", text_);
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.study_folder().join("run-001/summary.json")).unwrap(),
    )
    .unwrap();
    (summary, stdout)
}

#[test]
fn a_fixed_rate_reaches_steady_state_and_stops_early() {
    let lab = Lab::new();
    let (s, stdout) = run(&lab, &study("iops:20%", 2000, "60s"));
    let ss = &s["steady-state"];
    assert_eq!(ss["reached"], true, "{ss}");
    assert_eq!(s["status"], "complete");
    assert_eq!(s["end-reason"], "steady-state");
    assert_eq!(ss["criterion"], "iops:20%");
    assert_eq!(ss["unit"], "ops/s");
    assert_eq!(ss["window-seconds"], 1.0);
    assert_eq!(ss["max-seconds"], 60.0);
    let after = ss["reached-after-seconds"].as_f64().unwrap();
    // The ramp (0.2 s) and one window (1 s) at least; far below the 60 s limit.
    assert!((1.2 - 1e-9..30.0).contains(&after), "{ss}");
    let measured = s["measured-seconds"].as_f64().unwrap();
    assert!(
        measured < after + 5.0 && measured >= after - 0.2,
        "{measured} vs {after}"
    );
    let mean = ss["window-mean"].as_f64().unwrap();
    assert!((mean / 2000.0 - 1.0).abs() < 0.2, "{ss}");
    assert!(ss["deviation-percent"].as_f64().unwrap() < 20.0, "{ss}");
    assert!(ss["windows-judged"].as_u64().unwrap() >= 1);
    let ops = s["total"]["ops"].as_u64().unwrap();
    assert!(ops < 30 * 2000, "stopped early: {ops} operations");
    // On the timeline as an event, and in the terminal's table.
    let events = s["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["kind"] == "steady-state"
            && (e["time-seconds"].as_f64().unwrap() - after).abs() < 1e-9),
        "{events:?}"
    );
    assert!(stdout.contains("steady state reached after"), "{stdout}");
    // The Markdown report reads it back from the store.
    let out = lab.run(&[
        "report",
        lab.study_folder().to_str().unwrap(),
        "--format",
        "md",
        "-o",
        lab.path().join("r.md").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    let md = std::fs::read_to_string(lab.path().join("r.md")).unwrap();
    assert!(md.contains("## Steady state"), "{md}");
    assert!(md.contains("steady state reached after"), "{md}");
    // The HTML report has its own section: the table row of the run, with the time stored.
    let out = lab.run(&[
        "report",
        lab.study_folder().to_str().unwrap(),
        "-o",
        lab.path().join("r.html").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    let html = std::fs::read_to_string(lab.path().join("r.html")).unwrap();
    let section = &html[html
        .find("<section id=\"steady-state\">")
        .expect("a section")..];
    let row = section
        .split("<tr")
        .find(|r| r.contains("data-run=\"1\""))
        .expect("run 1's row");
    assert!(row.contains(">yes<"), "{row}");
    assert!(row.contains(&format!("data-value=\"{after}\"")), "{row}");
}

#[test]
fn a_criterion_the_run_cannot_meet_runs_to_its_duration() {
    let lab = Lab::new();
    // 2003 ops/s over 100 ms intervals: 200 or 201 operations each, so every window holds
    // samples 10 ops/s apart, never all within 1 op/s of their mean.
    let (s, stdout) = run(&lab, &study("iops:1", 2003, "3s"));
    let ss = &s["steady-state"];
    assert_eq!(ss["reached"], false, "{ss}");
    assert!(ss["reached-after-seconds"].is_null(), "{ss}");
    assert_eq!(ss["cut-short"], false);
    assert_eq!(s["status"], "complete");
    assert_eq!(s["end-reason"], "duration");
    assert!(s["measured-seconds"].as_f64().unwrap() >= 2.9);
    // Windows from 0.2 s + 1 s on, one per 100 ms interval.
    assert!(ss["windows-judged"].as_u64().unwrap() >= 10, "{ss}");
    assert!(ss["deviation"].as_f64().unwrap() >= 1.0, "{ss}");
    let events = s["events"].as_array().unwrap();
    assert!(!events.iter().any(|e| e["kind"] == "steady-state"));
    assert!(
        stdout.contains("steady state not reached: ran to its limit of 3 s"),
        "{stdout}"
    );
}
