//! Bad rate schedules (`[steps.schedule]`): shares that do not add up to 1, a phase table
//! longer than the step, a target in no group or in two, an unknown target, a workload rate
//! besides the schedule. Part of `study_errors` (its `check` helper): each error names the
//! file, the line and the key.

use super::{check, one_error};
use storlab::study;

/// Three null targets in two groups; two phases of 1 s in a 4 s step (the table repeats).
const SCHEDULED: &str = r#"name = "t"

[targets.a]
type = "null"
[targets.b]
type = "null"
[targets.c]
type = "null"

[workloads.rr]
block-size = "4KiB"

[[steps]]
workload = "rr"
targets = ["a", "b", "c"]
together = true
duration = "4s"
[steps.schedule]
total-rate-ops = 1000
phase = "1s"
[[steps.schedule.groups]]
name = "small"
targets = ["a"]
shares = [0.25, 0.75]
[[steps.schedule.groups]]
name = "large"
targets = ["b", "c"]
shares = [0.75, 0.25]
"#;

#[test]
fn a_valid_schedule_is_in_the_plan() {
    let plan = study::parse("good.toml", SCHEDULED).unwrap();
    assert_eq!(plan.runs.len(), 1);
    let s = plan.runs[0].schedule.as_ref().expect("the schedule");
    assert_eq!(s.total_rate_ops, 1000.0);
    assert_eq!(s.table_phases(), 2);
    assert_eq!(s.groups[1].targets, vec!["b", "c"]);
    // b's rate: 75% of 1000 split over two targets, then 25%; phases 3 and 4 repeat the table.
    let (first, changes) = s.worker_rates("b", 1, 4_000_000_000).unwrap();
    assert_eq!(first, 375.0);
    let rates: Vec<f64> = changes.iter().map(|c| c.rate_ops).collect();
    assert_eq!(rates, vec![125.0, 375.0, 125.0]);
}

#[test]
fn shares_of_a_phase_add_up_to_one() {
    check(
        &SCHEDULED.replace("shares = [0.75, 0.25]", "shares = [0.75, 0.35]"),
        24,
        "steps[1].schedule.groups[1].shares",
        "phase 2's shares add up to 1.1 (small 0.75 + large 0.35), not 1 (100%)",
    );
}

#[test]
fn a_share_is_a_fraction() {
    check(
        &SCHEDULED.replace("shares = [0.25, 0.75]", "shares = [25, 0.75]"),
        24,
        "steps[1].schedule.groups[1].shares",
        "25 is not a share",
    );
}

#[test]
fn a_phase_table_longer_than_the_step_is_refused() {
    check(
        &SCHEDULED.replace("phase = \"1s\"", "phase = \"3s\""),
        20,
        "steps[1].schedule.phase",
        "the phase table (2 phases of 3s) lasts 6s, longer than the step's duration (4s)",
    );
}

#[test]
fn every_group_gives_one_share_per_phase() {
    check(
        &SCHEDULED.replace("shares = [0.75, 0.25]", "shares = [0.75, 0.25, 0.5]"),
        28,
        "steps[1].schedule.groups[2].shares",
        "3 phases here, 2 in the first group",
    );
}

#[test]
fn a_target_in_no_group_is_refused() {
    check(
        &SCHEDULED.replace("targets = [\"b\", \"c\"]", "targets = [\"b\"]"),
        18,
        "steps[1].schedule.groups",
        "the step's target `c` is in no group",
    );
}

#[test]
fn a_target_in_two_groups_is_refused() {
    check(
        &SCHEDULED.replace(
            "targets = [\"b\", \"c\"]",
            "targets = [\"b\", \"c\", \"a\"]",
        ),
        27,
        "steps[1].schedule.groups[2].targets",
        "`a` is in two groups (`small` and `large`)",
    );
}

#[test]
fn a_group_target_not_in_the_step_is_refused() {
    check(
        &SCHEDULED.replace("targets = [\"a\"]", "targets = [\"a\", \"d\"]"),
        23,
        "steps[1].schedule.groups[1].targets",
        "`d` is not one of the step's targets (a, b, c)",
    );
}

#[test]
fn a_workload_rate_besides_the_schedule_is_refused() {
    check(
        &SCHEDULED.replace(
            "block-size = \"4KiB\"",
            "block-size = \"4KiB\"\nrate-ops = 100",
        ),
        12,
        "workloads.rr.rate-ops",
        "has a rate schedule ([steps[1].schedule]), which sets every target's rate",
    );
}

#[test]
fn groups_run_together() {
    check(
        &SCHEDULED.replace("together = true\n", ""),
        17,
        "steps[1].schedule",
        "set `together = true` on the step",
    );
}

#[test]
fn a_phase_is_whole_intervals() {
    check(
        &format!("interval = \"300ms\"\n{SCHEDULED}"),
        21,
        "steps[1].schedule.phase",
        "a phase is a whole number of timeline intervals",
    );
}

#[test]
fn unknown_schedule_keys_name_their_line() {
    let e = one_error(&SCHEDULED.replace("total-rate-ops", "total-rate"));
    assert_eq!(e.line, Some(19), "{e}");
    assert!(e.message.contains("total-rate"), "{e}");
}

#[test]
fn quick_mode_keeps_every_phase_at_a_second() {
    let mut plan = study::parse(
        "good.toml",
        &SCHEDULED
            .replace("phase = \"1s\"", "phase = \"12m\"")
            .replace("duration = \"4s\"", "duration = \"48m\""),
    )
    .unwrap();
    plan.make_quick();
    let r = &plan.runs[0];
    let s = r.schedule.as_ref().unwrap();
    assert_eq!(s.phase.0, std::time::Duration::from_secs(1));
    assert_eq!(r.duration.unwrap().0, std::time::Duration::from_secs(4));
    assert_eq!(r.interval.0, std::time::Duration::from_millis(100));
}
