//! Tests of fio's think time in the worker loop: what is in flight completes before the
//! pause, the pause holds the next I/O, and with a rate the starts due during it are caught
//! up or (ignore-for-rate) dropped.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use super::*;
use storlab_model::Op;
use storlab_record::Interval;
use storlab_targets::{Completion, Completions, Submitted};
use storlab_workload::Workload;

/// Queues every operation and completes only the oldest `min` (none when polled with 0: a
/// device that answers only when waited for); notes how many were in flight at each
/// submission, and when.
struct Slow {
    queued: std::collections::VecDeque<u32>,
    seen: std::rc::Rc<std::cell::RefCell<Vec<(usize, Instant)>>>,
}

impl Session for Slow {
    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.seen
            .borrow_mut()
            .push((self.queued.len(), Instant::now()));
        self.queued.push_back(slot);
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError> {
        for _ in 0..min {
            let Some(slot) = self.queued.pop_front() else {
                break;
            };
            out.push(Completion {
                slot,
                result: Ok(0),
                found: true,
            });
        }
        Ok(())
    }
}

/// Runs `workload` (block keys) at queue depth `qd` for `ops` operations, at `rate` I/Os
/// per second or closed loop; each submission's in-flight count and time.
fn run(workload: &str, qd: u32, ops: u64, rate: Option<f64>) -> Vec<(usize, Instant)> {
    let workload = Workload::from_table(
        toml::from_str(&format!("queue-depth = {qd}\n{workload}")).expect("toml"),
    )
    .expect("workload");
    let kinds = workload.kinds();
    let (tx, _rx) = sync_channel::<Box<Interval>>(64);
    let (spare_tx, spare_rx) = sync_channel(64);
    for _ in 0..4 {
        spare_tx
            .send(Interval::new(0, 0, &kinds, false))
            .expect("spare");
    }
    drop(spare_tx);
    let recorder = Recorder::new(Interval::new(0, 0, &kinds, false), tx, spare_rx);
    let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
    let gate = StartGate::new(0);
    let region = storlab_model::Region {
        offset_bytes: 0,
        size_bytes: 1 << 20,
    };
    let w = Worker {
        config: WorkerConfig {
            worker: 0,
            queue_depth: qd,
            overlap: Overlap::Concurrent {
                max_queue_depth: qd,
            },
            interval_ns: 1_000_000_000,
            warmup_ns: 0,
            duration_ns: None,
            start_delay_ns: 0,
            max_ops: Some(ops),
            rate_ops: rate,
            skip_late_ns: None,
            starts_paused: false,
            poisson_seed: None,
            stop_on_error: false,
            latency_target: None,
        },
        clock: Clock::new(),
        rate_changes: Box::new([]),
        flow: None,
        control: &control,
        gate: &gate,
        source: workload.source(region, 0, 1),
        recorder,
    };
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let session = Slow {
        queued: Default::default(),
        seen: seen.clone(),
    };
    let outcome = run_loop(session, w, 0);
    assert_eq!(outcome.measured_ops, ops);
    seen.take()
}

/// After every 4 I/Os, what is in flight completes, then the worker pauses 2 ms (the first
/// 1 ms spun): the 5th, 9th, ... I/O find nothing in flight and come 2 ms after the one
/// before; the others find the queue filling as without think time.
#[test]
fn think_time_drains_then_pauses_after_every_n_ios() {
    let seen = run(
        "think-time = { time = \"2ms\", every-ios = 4, spin = \"1ms\" }",
        4,
        16,
        None,
    );
    assert_eq!(seen.len(), 16);
    for (i, (in_flight, at)) in seen.iter().enumerate().skip(1) {
        if i % 4 == 0 {
            assert_eq!(*in_flight, 0, "I/O {i} after a pause: {seen:?}");
            let gap = at.duration_since(seen[i - 1].1);
            assert!(
                gap >= std::time::Duration::from_millis(2),
                "I/O {i}: {gap:?}"
            );
        }
    }
    assert!(
        seen.iter().any(|(n, _)| *n >= 2),
        "the queue fills between pauses"
    );
    // Without think time the queue stays full.
    let plain = run("", 4, 16, None);
    assert!(plain.iter().skip(4).all(|(n, _)| *n >= 3), "{plain:?}");
}

/// With a rate of 200 I/Os per second (a start every 5 ms) and a 50 ms pause every 5 I/Os:
/// by default (fio's catch-up) the starts due during the pause are issued at once after it;
/// with `ignore-for-rate` they are dropped and the I/Os after the pause keep the 5 ms gap
/// (the pacer never issues before an intended start, so that span holds under any load).
#[test]
fn a_rate_catches_up_after_think_time_unless_told_to_ignore_it() {
    let span_after_pause = |ignore: bool| {
        let seen = run(
            &format!(
                "think-time = {{ time = \"50ms\", every-ios = 5, ignore-for-rate = {ignore} }}"
            ),
            1,
            10,
            Some(200.0),
        );
        // From the 6th I/O (the first after the pause) to the 10th.
        seen[9].1.duration_since(seen[5].1)
    };
    let ms = std::time::Duration::from_millis;
    let caught_up = span_after_pause(false);
    assert!(caught_up < ms(10), "{caught_up:?}");
    let paced = span_after_pause(true);
    assert!(paced >= ms(19), "{paced:?}");
}
