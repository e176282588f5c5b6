//! The latency-target search in the worker loop, on a device whose queued operations
//! complete together after 2^d ms, d the number queued: far apart at each depth, so that a
//! loaded machine's late wake-ups do not move the answer.

use std::sync::mpsc::sync_channel;
use std::time::Duration;

use super::*;
use storlab_model::Op;
use storlab_model::latency_target::LatencyTarget;
use storlab_model::units::Dur;
use storlab_record::Interval;
use storlab_targets::{Completion, Completions, Submitted};
use storlab_workload::Workload;

/// Completes everything queued together, after 2^d ms for d queued; notes the most it ever
/// held.
struct Queue {
    queued: Vec<u32>,
    most: usize,
}

impl Session for Queue {
    fn submit(&mut self, slot: u32, _op: Op) -> Result<Submitted, OpError> {
        self.queued.push(slot);
        self.most = self.most.max(self.queued.len());
        Ok(Submitted::Queued)
    }

    fn complete(&mut self, _min: u32, out: &mut Completions) -> Result<(), OpError> {
        std::thread::sleep(Duration::from_millis(1 << self.queued.len()));
        for slot in self.queued.drain(..) {
            out.push(Completion {
                slot,
                result: Ok(0),
                found: true,
            });
        }
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![("most", self.most.to_string())]
    }
}

#[test]
fn the_worker_finds_the_largest_depth_under_the_target_and_never_exceeds_its_depth() {
    let workload = Workload::from_table(
        toml::from_str("read-share = 1.0\nqueue-depth = 16").expect("workload"),
    )
    .expect("workload");
    let kinds = workload.kinds();
    let (tx, _rx) = sync_channel::<Box<Interval>>(1024);
    let (spare_tx, spare_rx) = sync_channel(4);
    drop(spare_tx);
    let recorder = Recorder::new(Interval::new(0, 0, &kinds, false), tx, spare_rx);
    let control = Control::new(std::sync::Arc::new(AtomicBool::new(false)));
    let gate = StartGate::new(0);
    // 24 ms at 75%: depth 4 (16 ms) passes, depth 5 (32 ms) does not; a late wake-up in a
    // window of about 6 batches is one batch, under a quarter.
    let target = LatencyTarget {
        target: Dur(Duration::from_millis(24)),
        window: Dur(Duration::from_millis(100)),
        percentile: 75.0,
        keep_adjusting: false,
    };
    let w = Worker {
        config: WorkerConfig {
            worker: 0,
            queue_depth: 16,
            overlap: Overlap::Concurrent {
                max_queue_depth: 16,
            },
            interval_ns: 1_000_000_000,
            warmup_ns: 0,
            duration_ns: Some(10_000_000_000),
            start_delay_ns: 0,
            max_ops: None,
            rate_ops: None,
            skip_late_ns: None,
            starts_paused: false,
            poisson_seed: None,
            stop_on_error: true,
            latency_target: Some(target),
        },
        clock: Clock::new(),
        control: &control,
        gate: &gate,
        rate_changes: Box::new([]),
        flow: None,
        source: workload.source(
            storlab_model::Region {
                offset_bytes: 0,
                size_bytes: 1 << 30,
            },
            0,
            1,
        ),
        recorder,
    };
    let started = std::time::Instant::now();
    let outcome = run_loop(
        Queue {
            queued: Vec::new(),
            most: 0,
        },
        w,
        0,
    );
    let r = outcome.latency_search.expect("a search");
    let depths: Vec<u32> = r.steps.iter().map(|s| s.queue_depth).collect();
    // fio's rules: 1, 2, 4 pass; 8 fails -> (8+4)/2 = 6 fails -> (6+4)/2 = 5 fails ->
    // (5+4)/2 = 4 passes and stays: the final window at 4 passes.
    assert_eq!(depths, [1, 2, 4, 8, 6, 5, 4, 4], "{r:?}");
    assert_eq!((r.queue_depth, r.found), (4, true));
    assert!(r.steps[3].ops >= 1 && !r.steps[3].passed);
    // The job ended on the answer, long before its 10 s.
    assert_eq!(outcome.end_reason, EndReason::Ops);
    assert!(started.elapsed() < Duration::from_secs(5));
    // Never more in flight than the search allowed (8 at most, not the workload's 16).
    assert_eq!(outcome.used, vec![("most", "8".to_string())]);
}
