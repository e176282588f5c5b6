//! Tests of an IOmeter burst's delay in the worker loop: the operation that begins a burst
//! is held while what is in flight completes.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::sync_channel;

use super::*;
use storlab_model::Op;
use storlab_record::Interval;
use storlab_targets::{Completion, Completions, Submitted};
use storlab_workload::Workload;

/// Queues every operation and completes all queued ones at each `complete`; notes how
/// many were in flight when each was submitted.
struct Instant_ {
    queued: Vec<u32>,
    in_flight_at_submit: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
}

impl Session for Instant_ {
    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.in_flight_at_submit
            .borrow_mut()
            .push(self.queued.len());
        self.queued.push(slot);
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        for slot in self.queued.drain(..) {
            out.push(Completion {
                slot,
                result: Ok(0),
                found: true,
            });
        }
        Ok(())
    }
}

/// Runs an IOmeter access spec of bursts of 2 at queue depth 4 for 24 operations; how
/// many were in flight at each submission.
fn in_flight_with_burst_delay(delay: &str) -> Vec<usize> {
    let workload = Workload::from_table(
        toml::from_str(&format!(
            "queue-depth = 4\n[[access-spec]]\nblock-size = 4096\nburst-ios = 2\nburst-delay = \"{delay}\""
        ))
        .expect("workload"),
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
    // No collector hands these back: once they run out, the recorder makes new ones.
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
            queue_depth: 4,
            ..super::tests::config(
                Overlap::Concurrent { max_queue_depth: 4 },
                1_000_000_000,
                Some(24),
                None,
            )
        },
        clock: Clock::new(),
        rate_changes: Box::new([]),
        flow: None,
        control: &control,
        gate: &gate,
        source: workload.source(region, 0, 1),
        recorder,
    };
    let in_flight = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let session = Instant_ {
        queued: Vec::new(),
        in_flight_at_submit: in_flight.clone(),
    };
    let outcome = run_loop(session, w, 0);
    assert_eq!(outcome.measured_ops, 24);
    in_flight.take()
}

/// An IOmeter burst's delay holds the next burst while what is in flight completes: with
/// bursts of 2 and a delay, at most 1 other operation is in flight at a submission; without
/// the delay the queue depth of 4 fills.
#[test]
fn a_burst_delay_holds_issuing_while_completions_drain() {
    let held = in_flight_with_burst_delay("1ms");
    assert_eq!(held.len(), 24);
    assert!(held.iter().all(|&n| n <= 1), "{held:?}");
    let free = in_flight_with_burst_delay("0ms");
    assert!(free.iter().any(|&n| n >= 3), "{free:?}");
}
