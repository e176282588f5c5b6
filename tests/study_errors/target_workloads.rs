//! `target-workloads` of a step (a target that runs another workload beside the step's): a
//! valid one puts each target's own workload in the plan; a target not in the step, an
//! unknown workload, and a sweep of a parameter the other workload lacks are refused. Part
//! of `study_errors` (its `check` helper): each error names the file, the line and the key.

use super::check;
use storlab_study as study;

/// A reader and a writer on one file, together, the writer with its own workload.
const READER_WRITER: &str = r#"name = "t"

[targets.reader]
type = "null"
[targets.writer]
type = "null"

[workloads.r]
block-size = "4KiB"
read-share = 1.0

[workloads.w]
block-size = "64KiB"
read-share = 0.0

[[steps]]
workload = "r"
target-workloads = { writer = "w" }
targets = ["reader", "writer"]
together = true
duration = "1s"
sweep.queue-depth = [1, 8]
"#;

#[test]
fn each_target_runs_its_own_workload() {
    let plan = study::parse("good.toml", READER_WRITER).unwrap();
    assert_eq!(plan.runs.len(), 2, "one run per swept queue depth");
    for (run, qd) in plan.runs.iter().zip([1, 8]) {
        let names: Vec<&str> = run
            .targets
            .iter()
            .map(|t| t.workload_name.as_str())
            .collect();
        assert_eq!(names, ["r", "w"]);
        // The sweep applies to both workloads.
        for t in &run.targets {
            assert_eq!(t.workload.queue_depth(), qd, "{}", t.name);
        }
        assert_eq!(run.targets[0].workload.block_bytes(), 4096);
        assert_eq!(run.targets[1].workload.block_bytes(), 65536);
    }
}

#[test]
fn a_target_not_in_the_step_is_refused() {
    check(
        &READER_WRITER.replace("{ writer = \"w\" }", "{ logger = \"w\" }"),
        18,
        "steps[1].target-workloads.logger",
        "`logger` is not one of this step's targets (reader, writer)",
    );
}

#[test]
fn an_unknown_workload_is_refused() {
    check(
        &READER_WRITER.replace("{ writer = \"w\" }", "{ writer = \"ww\" }"),
        18,
        "steps[1].target-workloads.writer",
        "no workload named `ww` (defined: `r`, `w`)",
    );
}

#[test]
fn a_sweep_the_other_workload_cannot_take_is_refused() {
    let text = READER_WRITER.replace(
        "[workloads.w]\nblock-size = \"64KiB\"\nread-share = 0.0\n",
        "[workloads.w]\ntype = \"db-bench\"\nbenchmark = \"fillrandom\"\nnum = 100\n",
    );
    check(
        &text,
        23,
        "steps[1].sweep.queue-depth",
        "workload `w` (in target-workloads) has no such parameter",
    );
}
