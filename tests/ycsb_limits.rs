//! YCSB's limits through the real binary: an overflow of the insert-acknowledgement window is
//! a counted error that stops the run (YCSB throws "Too many unacknowledged insertion keys."),
//! and u64::MAX-like durations and rates, from YCSB properties or study files, are errors that
//! name what was given, never a panic or a wrapped count.

mod common;

use common::{Lab, text};

/// One insert stalls on worker 0 (the null target's `stall-worker`) while worker 1 goes on
/// inserting: once worker 1 finishes a key 2^20 past the stalled one, YCSB's window is full.
/// The run stops on that error, counted once as an `insert-window-full` insert error.
#[test]
fn insert_window_overflow_is_a_counted_error_that_stops_the_run() {
    let lab = Lab::new();
    let study = lab.write(
        "window.toml",
        r#"
name = "insert-window"

[targets.null]
type = "null"
stall-after-ops = 5
stall = "4s"
stall-worker = 0

[workloads.inserts]
type = "ycsb"
phase = "run"
record-count = 10
operation-count = 4000000
insert-proportion = 1
read-proportion = 0
update-proportion = 0
threads = 2

[[steps]]
workload = "inserts"
targets = ["null"]
"#,
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "--quiet"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summaries: serde_json::Value = serde_json::from_str(&stdout).expect("JSON summaries");
    let s = &summaries[0];
    assert_eq!(s["end-reason"], "error", "{s:#}");
    let insert = &s["targets"][0]["kinds"]["insert"];
    assert_eq!(insert["errors"], 1, "{insert:#}");
    assert_eq!(
        insert["errors-by-kind"]["insert-window-full"], 1,
        "{insert:#}"
    );
    // More than 2^20 inserts finished before the window overflowed.
    assert!(insert["ops"].as_u64().unwrap() >= 1 << 20, "{insert:#}");
    let samples = s["error-samples"].to_string();
    assert!(
        samples.contains("too many unacknowledged insert keys"),
        "{samples}"
    );
}

/// `maxexecutiontime`, `target` and study durations at u64::MAX-like values: a clear error
/// naming the property, exit code 2 for the YCSB command line, and no panic.
#[test]
fn huge_durations_and_rates_are_refused_by_name() {
    let lab = Lab::new();
    for (extra, says) in [
        (
            "maxexecutiontime=18446744073709551615",
            "maxexecutiontime=18446744073709551615: at most 3153600000 seconds",
        ),
        ("maxexecutiontime=1e300", "maxexecutiontime=1e300: at most"),
        ("target=1e-300", "target=1e-300: leaves 1.000e300 s"),
    ] {
        let out = lab.run(&[
            "ycsb",
            "run",
            "basic",
            "-p",
            "recordcount=10",
            "-p",
            "operationcount=10",
            "-p",
            extra,
        ]);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra}: {stdout}\n{stderr}");
        assert!(stderr.contains(says), "{extra}: {stderr}");
        assert!(!stderr.contains("panicked"), "{extra}: {stderr}");
    }
    for (line, key) in [
        ("duration = 1e30", "duration"),
        ("duration = \"18446744073709551615s\"", "duration"),
        ("warmup = 9223372036854775807\nduration = \"1s\"", "warmup"),
    ] {
        let study = lab.write(
            "huge.toml",
            &format!(
                "name = \"huge\"\n[targets.null]\ntype = \"null\"\n[workloads.run]\ntype = \"ycsb\"\nphase = \"run\"\nrecord-count = 10\noperation-count = 10\n[[steps]]\nworkload = \"run\"\ntargets = [\"null\"]\n{line}\n"
            ),
        );
        let out = lab.run(&["run", study.to_str().unwrap(), "--quiet"]);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{line}: {stdout}\n{stderr}");
        assert!(!stderr.contains("panicked"), "{line}: {stderr}");
        assert!(
            stderr.contains("too long") && stderr.contains(key),
            "{line}: {stderr}"
        );
    }
}
