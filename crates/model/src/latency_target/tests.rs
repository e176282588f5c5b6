use std::time::Duration;

use super::*;

fn target(percentile: f64, keep_adjusting: bool) -> LatencyTarget {
    LatencyTarget {
        target: Dur(Duration::from_micros(500)),
        window: Dur(Duration::from_millis(100)),
        percentile,
        keep_adjusting,
    }
}

/// Plays windows of 100 completions on a device where a window at depth d has `over(d)`
/// completions over the target; returns the depths judged and the last verdict.
fn play(s: &mut Search, over: impl Fn(u32) -> u64, windows: usize) -> (Vec<u32>, Verdict) {
    let mut depths = Vec::new();
    let mut now = 0;
    let mut verdict = Verdict::Go;
    for _ in 0..windows {
        depths.push(s.queue_depth());
        let bad = over(s.queue_depth());
        for i in 0..100 {
            let trips = s.completed(if i < bad { 900_000 } else { 100_000 });
            assert!(!trips || s.percentile() >= 100.0);
        }
        now += 100_000_000;
        assert!(s.window_due(now));
        verdict = s.judge(now, 0);
        match verdict {
            Verdict::Drain => s.new_window(now),
            Verdict::Done | Verdict::Fatal => break,
            Verdict::Go => {}
        }
    }
    (depths, verdict)
}

#[test]
fn doubles_until_a_failure_then_bisects_and_confirms_with_a_final_window() {
    // fio 3.33 on a device whose windows pass up to depth 5, iodepth=32:
    // 1 ok -> 2 ok -> 4 ok -> 8 fail -> (8+4)/2=6 fail -> (6+4)/2=5 ok -> (5+6)/2=5 same:
    // final window at 5 ok -> done.
    let mut s = Search::new(&target(100.0, false), 32, 0);
    let (depths, verdict) = play(&mut s, |d| if d <= 5 { 0 } else { 3 }, 20);
    assert_eq!(depths, [1, 2, 4, 8, 6, 5, 5]);
    assert_eq!(verdict, Verdict::Done);
    assert_eq!(s.queue_depth(), 5);
    let passed: Vec<bool> = s.steps.iter().map(|x| x.passed).collect();
    assert_eq!(passed, [true, true, true, false, false, true, true]);
    let finals: Vec<bool> = s.steps.iter().map(|x| x.final_window).collect();
    assert_eq!(finals, [false, false, false, false, false, false, true]);
    assert!(s.found());
    // Once done, a window judged again (completions still draining) changes nothing.
    assert_eq!(s.judge(u64::MAX, 0), Verdict::Done);
    assert_eq!((s.steps.len(), s.queue_depth()), (7, 5));
}

#[test]
fn doubling_stops_at_the_jobs_iodepth() {
    // iodepth=6: 1 -> 2 -> 4 -> 8 clamped to 6 -> 6 (high == iodepth: doubles, clamped) final.
    let mut s = Search::new(&target(100.0, false), 6, 0);
    let (depths, verdict) = play(&mut s, |_| 0, 20);
    assert_eq!(depths, [1, 2, 4, 6, 6]);
    assert_eq!(verdict, Verdict::Done);
    assert_eq!(s.result(0).queue_depth, 6);
}

#[test]
fn a_percentile_below_100_counts_the_share_over_target() {
    // 90%: 10 of 100 over passes, 11 fails. Passes up to depth 3.
    let mut s = Search::new(&target(90.0, false), 16, 0);
    let (depths, verdict) = play(&mut s, |d| if d <= 3 { 10 } else { 11 }, 20);
    // 1 ok, 2 ok, 4 fail -> (4+2)/2=3 ok -> (3+4)/2=3 same, final at 3 ok -> done.
    assert_eq!(depths, [1, 2, 4, 3, 3]);
    assert_eq!(verdict, Verdict::Done);
    assert_eq!(s.steps[2].ops_over_target, 11);
    assert!(!s.steps[2].passed);
}

#[test]
fn a_failing_window_at_depth_1_goes_on_without_a_step() {
    let mut s = Search::new(&target(90.0, false), 8, 0);
    for _ in 0..50 {
        s.completed(900_000);
    }
    assert_eq!(s.judge(100_000_000, 0), Verdict::Go);
    assert!(s.steps.is_empty());
    // The window goes on: 50 over of 500 is 90% under the target, a pass.
    for _ in 0..450 {
        s.completed(1);
    }
    assert_eq!(s.judge(100_000_001, 0), Verdict::Go);
    assert_eq!(s.steps.len(), 1);
    assert_eq!(s.steps[0].ops, 500);
    assert_eq!(s.queue_depth(), 2);
}

#[test]
fn at_100_percent_one_slow_completion_backs_off_at_once_and_is_fatal_at_depth_1() {
    let mut s = Search::new(&target(100.0, false), 16, 0);
    assert!(s.completed(900_000));
    assert_eq!(s.fail_now(10, 900_000), Verdict::Fatal);
    let mut s = Search::new(&target(100.0, false), 16, 0);
    let _ = play(&mut s, |_| 0, 3); // 1, 2, 4 pass: now at 8
    assert_eq!(s.queue_depth(), 8);
    assert!(!s.completed(1));
    assert!(s.completed(500_001));
    assert_eq!(s.fail_now(1, 500_001), Verdict::Drain);
    // high = 8, low = 4: (8+4)/2.
    assert_eq!(s.queue_depth(), 6);
    assert_eq!(s.steps.last().map(|x| (x.ops, x.passed)), Some((2, false)));
}

#[test]
fn keep_adjusting_raises_the_failing_depth_after_three_passes_below_it() {
    // latency_run=1: never done. Passes up to 5: ... 8 fail, 6 fail, 5 ok (stable 1, stays
    // 5), 5 ok (stable 2), 5 ok (stable 3: high 6 -> 7, (5+7)/2 = 6), 6 fail -> 5.
    let mut s = Search::new(&target(100.0, true), 32, 0);
    let (depths, verdict) = play(&mut s, |d| if d <= 5 { 0 } else { 1 }, 10);
    assert_eq!(depths, [1, 2, 4, 8, 6, 5, 5, 5, 6, 5]);
    assert_ne!(verdict, Verdict::Done);
    assert!(!s.found());
}
