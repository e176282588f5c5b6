//! Bad study files: every error names the file, the line and the key, and says what is expected.

mod common;

use storlab::study;

const GOOD: &str = r#"name = "t"

[targets.disk]
type = "null"

[workloads.rr]
block-size = "4KiB"
queue-depth = 4

[[steps]]
workload = "rr"
targets = ["disk"]
duration = "1s"
"#;

/// Parses `text` and returns its single error (panics if valid or several).
fn one_error(text: &str) -> study::StudyError {
    let errs = study::parse("bad.toml", text)
        .expect_err("the study should be refused")
        .0;
    assert_eq!(errs.len(), 1, "expected one error, got {errs:?}");
    errs.into_iter().next().unwrap()
}

fn check(text: &str, line: usize, key: &str, says: &str) {
    let e = one_error(text);
    assert_eq!(e.file, "bad.toml");
    assert_eq!(e.line, Some(line), "line of {e}");
    assert_eq!(e.key, key, "key of {e}");
    assert!(
        e.message.contains(says),
        "message of {e} should contain {says:?}"
    );
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("bad.toml:{line}: `{key}`")),
        "{shown}"
    );
}

#[test]
fn the_good_study_is_valid() {
    let plan = study::parse("good.toml", GOOD).unwrap();
    assert_eq!(plan.runs.len(), 1);
}

#[test]
fn toml_syntax_error() {
    let text = GOOD.replace("queue-depth = 4", "queue-depth = = 4");
    let e = one_error(&text);
    assert_eq!(e.line, Some(8));
    assert_eq!(e.key, "workloads.rr.queue-depth");
}

#[test]
fn unknown_top_level_key() {
    check(
        &GOOD.replace("name = \"t\"", "nmae = \"t\""),
        1,
        "nmae",
        "unknown field",
    );
}

#[test]
fn unknown_workload_key() {
    check(
        &GOOD.replace("queue-depth = 4", "queue-dept = 4"),
        8,
        "workloads.rr.queue-dept",
        "unknown field",
    );
}

#[test]
fn bad_size_unit() {
    check(
        &GOOD.replace("\"4KiB\"", "\"4XB\""),
        7,
        "workloads.rr.block-size",
        "invalid size",
    );
}

#[test]
fn read_share_out_of_range() {
    check(
        &GOOD.replace("queue-depth = 4", "read-share = 1.5"),
        8,
        "workloads.rr.read-share",
        "fraction",
    );
}

#[test]
fn unknown_target_type() {
    check(
        &GOOD.replace("type = \"null\"", "type = \"nvme\""),
        4,
        "targets.disk.type",
        "unknown target type `nvme`",
    );
}

#[test]
fn missing_target_type() {
    check(
        &GOOD.replace("type = \"null\"\n", ""),
        3,
        "targets.disk",
        "missing `type`",
    );
}

#[test]
fn unknown_target_option() {
    check(
        &GOOD.replace("type = \"null\"", "type = \"null\"\nspeed = 3"),
        5,
        "targets.disk.speed",
        "unknown field",
    );
}

#[test]
fn step_names_a_missing_workload() {
    check(
        &GOOD.replace("workload = \"rr\"", "workload = \"rw\""),
        11,
        "steps[1].workload",
        "no workload named `rw`",
    );
}

#[test]
fn step_names_a_missing_target() {
    check(
        &GOOD.replace("targets = [\"disk\"]", "targets = [\"disk\", \"ssd\"]"),
        12,
        "steps[1].targets",
        "no target named `ssd`",
    );
}

#[test]
fn step_without_a_bound() {
    check(
        &GOOD.replace("duration = \"1s\"\n", ""),
        10,
        "steps[1]",
        "needs a bound",
    );
}

#[test]
fn bad_duration() {
    check(
        &GOOD.replace("\"1s\"", "\"soon\""),
        13,
        "steps.duration",
        "invalid duration",
    );
}

#[test]
fn sweep_of_an_unknown_parameter() {
    let text = format!("{GOOD}sweep.depth = [1, 2]\n");
    check(
        &text,
        14,
        "steps[1].sweep.depth",
        "not a workload parameter",
    );
}

#[test]
fn bad_value_inside_a_sweep_points_at_the_value() {
    let text = format!("{GOOD}sweep.queue-depth = [\n  1,\n  0,\n]\n");
    check(
        &text,
        16,
        "steps[1].sweep.queue-depth",
        "queue-depth must be",
    );
}

#[test]
fn psync_with_queue_depth_above_one() {
    let text = GOOD.replace(
        "type = \"null\"",
        "type = \"file\"\npath = \"x.dat\"\nsize = \"1MiB\"\nengine = \"psync\"",
    );
    check(&text, 11, "targets.disk", "queue-depth must be 1");
}

#[test]
fn direct_io_with_unaligned_blocks() {
    let text = GOOD
        .replace(
            "type = \"null\"",
            "type = \"file\"\npath = \"x.dat\"\nsize = \"1MiB\"\ndirect = true",
        )
        .replace("\"4KiB\"", "1000");
    check(&text, 10, "targets.disk", "multiples of 512");
}

#[test]
fn no_steps_at_all() {
    let text = &GOOD[..GOOD.find("[[steps]]").unwrap()];
    let e = one_error(text);
    assert_eq!(e.key, "steps");
    assert!(e.message.contains("no [[steps]]"));
}

#[test]
fn several_problems_are_all_reported() {
    let text = GOOD
        .replace("queue-depth = 4", "queue-depth = 0")
        .replace("type = \"null\"", "type = \"nul\"");
    let errs = study::parse("bad.toml", &text).unwrap_err().0;
    assert!(errs.len() >= 2, "{errs:?}");
}

#[test]
fn the_binary_reports_file_line_and_key_and_exits_2() {
    let lab = common::Lab::new();
    let study = lab.write(
        "bad.toml",
        &GOOD.replace("queue-depth = 4", "queue-depth = \"deep\""),
    );
    let out = lab.run(&["check", study.to_str().unwrap()]);
    let (_, err) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:8: `workloads.rr.queue-depth`"),
        "{err}"
    );
    let good = lab.write("good.toml", GOOD);
    let out = lab.run(&["check", good.to_str().unwrap()]);
    assert!(out.status.success());
}
