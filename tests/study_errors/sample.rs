//! Bad `sample` events: a trigger key (a sample event runs through the whole step) and
//! `recovery` are refused, by the parser and by `storlab check`, with file, line and key.
//! Part of `study_errors` (its `check` helper).

use super::{GOOD, check};
use crate::common;
use storlab_study as study;

/// GOOD with a `sample` event (its header on line 15), `lines` from line 19.
fn with_sample(lines: &str) -> String {
    format!(
        "{GOOD}\n[[steps.events]]\nname = \"node-use\"\naction = \"sample\"\ncommand = [\"scripts/hci.sh\", \"watch\", \"/tmp/hci\", \"--every\", \"1\"]\n{lines}"
    )
}

#[test]
fn a_sample_event_needs_no_trigger() {
    let plan = study::parse("good.toml", &with_sample("")).unwrap();
    let e = &plan.runs[0].events[0];
    assert_eq!(e.trigger, study::events::Trigger::WholeStep);
    assert_eq!(e.on_failure, study::events::OnFailure::Continue);
    assert!(e.recovery.is_none());
}

#[test]
fn a_sample_event_with_a_trigger_key() {
    check(
        &with_sample("at = \"0.5s\"\n"),
        19,
        "steps[1].events[1].at",
        "a `sample` event takes no `at`",
    );
    check(
        &with_sample("before-step = true\n"),
        19,
        "steps[1].events[1].before-step",
        "runs through the whole step",
    );
    check(
        &with_sample("recovery = true\n"),
        19,
        "steps[1].events[1].recovery",
        "recovery is measured around a fault",
    );
}

#[test]
fn storlab_check_refuses_a_trigger_on_a_sample_event() {
    let lab = common::Lab::new();
    let study = lab.write("bad.toml", &with_sample("after-step = true\n"));
    let out = lab.run(&["check", study.to_str().unwrap()]);
    let (_, err) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:19: `steps[1].events[1].after-step`"),
        "{err}"
    );
    assert!(err.contains("takes no `after-step`"), "{err}");
    let good = lab.write("good.toml", &with_sample(""));
    let out = lab.run(&["check", good.to_str().unwrap()]);
    assert!(out.status.success(), "{:?}", common::text(&out));
}
