//! The latency-target search inside the worker loop (see [`storlab_model::latency_target`]):
//! the depth it allows, each measured completion's latency fed to it, each window's latency
//! at the percentile from the window's own HDR histogram, and the drain (nothing issued until
//! what is in flight has completed) after a back-off or before the final window, as fio's
//! `io_u_quiesce`. Completions seen while draining belong to no window (fio starts the next
//! window after its quiesce too).

use hdrhistogram::Histogram;

use storlab_model::latency_target::{LatencySearchResult, LatencyTarget, Search, Verdict};
use storlab_record::new_histogram;

/// The search and the window it judges, in one worker.
pub(super) struct LatencyRun {
    search: Search,
    window: Histogram<u64>,
    draining: bool,
    measure_start: u64,
}

impl LatencyRun {
    /// The worker's search, when its workload has a latency target.
    pub(super) fn for_config(cfg: &super::WorkerConfig, measure_start: u64) -> Option<LatencyRun> {
        cfg.latency_target
            .map(|t| LatencyRun::new(&t, cfg.queue_depth, measure_start))
    }

    pub(super) fn new(t: &LatencyTarget, max_depth: u32, measure_start: u64) -> LatencyRun {
        LatencyRun {
            search: Search::new(t, max_depth, 0),
            window: new_histogram(),
            draining: false,
            measure_start,
        }
    }

    /// Operations that may be in flight now.
    #[inline]
    pub(super) fn limit(&self) -> usize {
        if self.draining {
            0
        } else {
            self.search.queue_depth() as usize
        }
    }

    fn at(&self, now: u64) -> u64 {
        now.saturating_sub(self.measure_start)
    }

    fn window_latency_ns(&self) -> u64 {
        self.window
            .value_at_quantile(self.search.percentile() / 100.0)
    }

    fn decided(&mut self, verdict: Verdict) -> Verdict {
        self.window.reset();
        if verdict == Verdict::Drain {
            self.draining = true;
        }
        verdict
    }

    /// A measured completion that took `latency_ns`.
    #[inline]
    pub(super) fn completed(&mut self, now: u64, latency_ns: u64) -> Verdict {
        if self.draining {
            return Verdict::Go;
        }
        let _ = self.window.record(latency_ns.max(1));
        if !self.search.completed(latency_ns) {
            return Verdict::Go;
        }
        let v = self.search.fail_now(self.at(now), self.window_latency_ns());
        self.decided(v)
    }

    /// After a batch of completions, with `outstanding` still in flight: ends a drain, or
    /// judges a window that is due.
    #[inline]
    pub(super) fn check(&mut self, now: u64, outstanding: usize) -> Verdict {
        if self.draining {
            if outstanding == 0 {
                self.draining = false;
                self.search.new_window(self.at(now));
            }
            return Verdict::Go;
        }
        if now < self.measure_start || !self.search.window_due(self.at(now)) {
            return Verdict::Go;
        }
        let steps = self.search.steps.len();
        let v = self.search.judge(self.at(now), self.window_latency_ns());
        if self.search.steps.len() == steps {
            // A failure at depth 1 short of 100%: the window goes on (fio).
            return v;
        }
        self.decided(v)
    }

    pub(super) fn result(&self, worker: u32) -> LatencySearchResult {
        self.search.result(worker)
    }
}
