//! Bad rate schedules (`[steps.schedule]`): shares that do not add up to 1, a phase table
//! longer than the step, a target in no group or in two, an unknown target, a workload rate
//! besides the schedule. Part of `study_errors` (its `check` helper): each error names the
//! file, the line and the key.

use super::{check, one_error};
use storlab_study as study;

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
    assert_eq!(s.total_rate_ops, Some(1000.0));
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

/// Four groups whose shares come from the named shape `hci-elastic` (ten phases).
const SHAPED: &str = r#"name = "t"

[targets.a]
type = "null"
[targets.b]
type = "null"
[targets.c]
type = "null"
[targets.d]
type = "null"

[workloads.rr]
block-size = "4KiB"

[[steps]]
workload = "rr"
targets = ["a", "b", "c", "d"]
together = true
duration = "10s"
[steps.schedule]
total-rate-ops = 1000
phase = "1s"
shape = "hci-elastic"
moving-average-phases = [1, 5]
[[steps.schedule.groups]]
name = "g1"
targets = ["a"]
[[steps.schedule.groups]]
name = "g2"
targets = ["b"]
[[steps.schedule.groups]]
name = "g3"
targets = ["c"]
[[steps.schedule.groups]]
name = "g4"
targets = ["d"]
"#;

#[test]
fn the_hci_elastic_shape_fills_four_groups_shares() {
    let plan = study::parse("good.toml", SHAPED).unwrap();
    let s = plan.runs[0].schedule.as_ref().expect("the schedule");
    assert_eq!(s.table_phases(), 10);
    assert_eq!(s.shape.as_deref(), Some("hci-elastic"));
    assert_eq!(s.moving_average_phases, vec![1, 5]);
    // Over the table, the groups carry 10, 20, 30 and 40% of the total.
    for (g, want) in s.groups.iter().zip([0.1, 0.2, 0.3, 0.4]) {
        let mean = g.shares.iter().sum::<f64>() / 10.0;
        assert!((mean - want).abs() < 1e-9, "{}: {mean}", g.name);
    }
}

#[test]
fn an_unknown_shape_is_refused_by_name() {
    check(
        &SHAPED.replace("\"hci-elastic\"", "\"sawtooth\""),
        23,
        "steps[1].schedule.shape",
        "unknown shape `sawtooth`: the named shapes are hci-elastic",
    );
}

#[test]
fn a_shape_and_shares_together_are_refused() {
    check(
        &SHAPED.replace(
            "targets = [\"b\"]",
            "targets = [\"b\"]\nshares = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]",
        ),
        31,
        "steps[1].schedule.groups[2].shares",
        "give either the shape or each group's `shares`, not both",
    );
}

#[test]
fn the_hci_elastic_shape_needs_four_groups() {
    let three = SHAPED
        .replace(
            "targets = [\"a\", \"b\", \"c\", \"d\"]",
            "targets = [\"a\", \"b\", \"c\"]",
        )
        .replace(
            "[[steps.schedule.groups]]\nname = \"g4\"\ntargets = [\"d\"]\n",
            "",
        );
    check(
        &three,
        23,
        "steps[1].schedule.shape",
        "the shape `hci-elastic` is a table for 4 groups (10, 20, 30 and 40% on average); the schedule lists 3",
    );
}

#[test]
fn a_group_without_shares_or_shape_is_refused() {
    let errs = study::parse("bad.toml", &SHAPED.replace("shape = \"hci-elastic\"\n", ""))
        .expect_err("no shares anywhere")
        .0;
    assert_eq!(errs.len(), 4, "one per group: {errs:?}");
    let e = &errs[0];
    assert_eq!(
        (e.line, e.key.as_str()),
        (Some(26), "steps[1].schedule.groups[1].shares")
    );
    assert!(
        e.message
            .contains("give the group's share of the total in each phase (`shares`), or a `shape`"),
        "{e}"
    );
}

#[test]
fn a_moving_average_window_is_at_least_one_phase() {
    check(
        &SHAPED.replace("[1, 5]", "[0, 5]"),
        24,
        "steps[1].schedule.moving-average-phases",
        "a moving average's window is at least 1 phase",
    );
}

#[test]
fn a_latency_limit_is_above_zero() {
    check(
        &SHAPED.replace("[1, 5]", "[1, 5]\nlatency-limit = \"0s\""),
        25,
        "steps[1].schedule.latency-limit",
        "latency-limit is how late an intended start may be and still be sent: above 0s",
    );
}

/// The closed-loop variant of [`SCHEDULED`]: 4 workers active in every phase.
fn closed() -> String {
    SCHEDULED.replace("total-rate-ops = 1000", "total-workers = 4")
}

#[test]
fn a_closed_loop_schedule_sets_each_targets_threads_per_phase() {
    let plan = study::parse("good.toml", &closed()).unwrap();
    let s = plan.runs[0].schedule.as_ref().expect("the schedule");
    assert_eq!((s.total_rate_ops, s.total_workers), (None, Some(4)));
    // small: 1 worker, then 3; large: 3 (b 2, c 1), then 1 (b).
    assert_eq!(s.group_workers(0), Some(vec![1, 3]));
    assert_eq!(s.group_workers(1), Some(vec![3, 1]));
    assert_eq!(s.target_threads("a"), Some(3));
    assert_eq!(s.target_threads("b"), Some(2));
    assert_eq!(s.target_threads("c"), Some(1));
    // c's thread runs in phases 1 and 3, paused in 2 and 4.
    let (first, changes) = s.worker_activity("c", 0, 4_000_000_000).unwrap();
    assert!(first);
    let at: Vec<(u64, bool)> = changes
        .iter()
        .map(|c| (c.at_ns, c.rate_ops > 0.0))
        .collect();
    assert_eq!(
        at,
        vec![
            (1_000_000_000, false),
            (2_000_000_000, true),
            (3_000_000_000, false)
        ]
    );
}

#[test]
fn a_schedule_gives_a_rate_or_workers_not_both_nor_neither() {
    check(
        &SCHEDULED.replace(
            "total-rate-ops = 1000",
            "total-rate-ops = 1000\ntotal-workers = 4",
        ),
        19,
        "steps[1].schedule.total-rate-ops",
        "give either total-rate-ops (open loop",
    );
    check(
        &SCHEDULED.replace("total-rate-ops = 1000\n", ""),
        18,
        "steps[1].schedule.total-rate-ops",
        "give total-rate-ops (open loop: operations per second of all groups together) or total-workers",
    );
    check(
        &SCHEDULED.replace("total-rate-ops = 1000", "total-workers = 0"),
        19,
        "steps[1].schedule.total-workers",
        "at least 1",
    );
}

#[test]
fn a_closed_loop_schedule_refuses_workload_threads_and_a_latency_limit() {
    check(
        &closed().replace(
            "block-size = \"4KiB\"",
            "block-size = \"4KiB\"\nthreads = 2",
        ),
        12,
        "workloads.rr.threads",
        "sets every target's threads per phase: remove `threads` from the workload",
    );
    check(
        &closed().replace("phase = \"1s\"", "phase = \"1s\"\nlatency-limit = \"10ms\""),
        21,
        "steps[1].schedule.latency-limit",
        "a closed-loop schedule (total-workers) has none",
    );
}
