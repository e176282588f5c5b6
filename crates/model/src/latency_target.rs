//! The latency-target search (fio's `latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`): the largest queue depth at which a share of the completions stays under a
//! latency target, found as fio 3.33 finds it (io_u.c, `lat_target_*`).
//!
//! The worker starts at depth 1 and judges each window (`window` long, from the end of the
//! last decision): a window passes when at least `percentile`% of its completions took no
//! longer than `target`. A pass raises the depth: doubled until a window has failed, then
//! halfway to the lowest depth seen failing (after 3 passes in a row one below it, that
//! failing depth is raised by 1). A failure lowers it halfway down to the highest depth seen
//! passing, after letting what is in flight complete. At 100% a single completion over the
//! target fails its window at once, and at depth 1 it is an error (fio: "latency of N nsec
//! exceeds specified max"). When a pass leaves the depth where it was, the search has its
//! answer: one more window runs at that depth and the job ends (unless `keep-adjusting`, fio's
//! `latency_run`, keeps it searching until the job's own end).

use serde::{Deserialize, Serialize};

use crate::units::Dur;

/// A workload's latency target (the search's settings).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LatencyTarget {
    /// The latency a window's completions must stay under (fio's total latency).
    pub target: Dur,
    /// How long each depth is judged.
    pub window: Dur,
    /// The share of a window's completions, percent, that must be under the target.
    #[serde(default = "hundred")]
    pub percentile: f64,
    /// Go on adjusting after the answer is found (fio's `latency_run`).
    #[serde(default)]
    pub keep_adjusting: bool,
}

fn hundred() -> f64 {
    100.0
}

/// One judged window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LatencyStep {
    /// When the window ended (run clock, ns from the start of measurement).
    pub end_ns: u64,
    /// The queue depth the window ran at.
    pub queue_depth: u32,
    /// Completions in the window.
    pub ops: u64,
    /// Of them, those that took longer than the target.
    pub ops_over_target: u64,
    /// The window's latency at the search's percentile (its HDR histogram), ns.
    pub percentile_latency_ns: u64,
    pub passed: bool,
    /// The window run at the answer after it was found (fio's final run).
    pub final_window: bool,
}

/// A worker's search: its answer and every window it judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LatencySearchResult {
    /// The target the worker ran on (set when the run is summarized).
    #[serde(default)]
    pub target: String,
    /// The worker's index in the run.
    pub worker: u32,
    /// The search's settings: the latency target, ns; the window, ns; the percentile.
    pub target_latency_ns: u64,
    pub window_ns: u64,
    pub percentile: f64,
    /// The depth the search ended at (fio's `latency_depth`).
    pub queue_depth: u32,
    /// Whether the answer was confirmed by a final window (fio ends the job there).
    pub found: bool,
    pub steps: Vec<LatencyStep>,
}

/// What the worker does after a completion or a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go on at [`Search::queue_depth`].
    Go,
    /// Let everything in flight complete, then call [`Search::new_window`].
    Drain,
    /// The search is over: stop issuing (fio's `td->done`).
    Done,
    /// A completion took longer than a 100% target at depth 1: the job fails.
    Fatal,
}

/// fio's search state (`latency_qd`, `_low`, `_high`, `_stable_count`, `_end_run`).
#[derive(Debug, Clone)]
pub struct Search {
    target_ns: u64,
    window_ns: u64,
    percentile: f64,
    keep_adjusting: bool,
    max_depth: u32,
    depth: u32,
    low: u32,
    high: u32,
    stable: u32,
    final_run: bool,
    /// The final window passed: nothing more is judged.
    done: bool,
    window_start_ns: u64,
    ops: u64,
    over: u64,
    pub steps: Vec<LatencyStep>,
}

impl Search {
    /// A search up to `max_depth` (the workload's queue depth), its first window from `now_ns`.
    pub fn new(t: &LatencyTarget, max_depth: u32, now_ns: u64) -> Search {
        let max_depth = max_depth.max(1);
        Search {
            target_ns: t.target.0.as_nanos() as u64,
            window_ns: t.window.0.as_nanos() as u64,
            percentile: t.percentile,
            keep_adjusting: t.keep_adjusting,
            max_depth,
            depth: 1,
            low: 1,
            high: max_depth,
            stable: 0,
            final_run: false,
            done: false,
            window_start_ns: now_ns,
            ops: 0,
            over: 0,
            steps: Vec::new(),
        }
    }

    /// Operations the worker may keep in flight now.
    pub fn queue_depth(&self) -> u32 {
        self.depth
    }

    pub fn target_ns(&self) -> u64 {
        self.target_ns
    }

    pub fn percentile(&self) -> f64 {
        self.percentile
    }

    /// Whether the search ended on its answer (a final window passed).
    pub fn found(&self) -> bool {
        self.steps
            .last()
            .is_some_and(|s| s.final_window && s.passed)
    }

    /// One completion of the current window. True when it fails the window at once (over a
    /// 100% target): call [`Search::fail_now`].
    pub fn completed(&mut self, latency_ns: u64) -> bool {
        self.ops += 1;
        if latency_ns <= self.target_ns {
            return false;
        }
        self.over += 1;
        self.percentile >= 100.0
    }

    /// Whether the current window has lasted its length.
    pub fn window_due(&self, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.window_start_ns) >= self.window_ns
    }

    /// Starts a window (after a drain, or a decision).
    pub fn new_window(&mut self, now_ns: u64) {
        self.window_start_ns = now_ns;
        self.ops = 0;
        self.over = 0;
    }

    fn step(&mut self, now_ns: u64, latency_ns: u64, passed: bool) {
        self.steps.push(LatencyStep {
            end_ns: now_ns,
            queue_depth: self.depth,
            ops: self.ops,
            ops_over_target: self.over,
            percentile_latency_ns: latency_ns,
            passed,
            final_window: self.final_run,
        });
    }

    /// A completion over a 100% target (fio's `__lat_target_failed` from the completion).
    pub fn fail_now(&mut self, now_ns: u64, latency_ns: u64) -> Verdict {
        if self.depth == 1 {
            self.step(now_ns, latency_ns, false);
            return Verdict::Fatal;
        }
        self.step(now_ns, latency_ns, false);
        self.back_off();
        Verdict::Drain
    }

    /// Judges the window that is due (fio's `lat_target_check`); `latency_ns` is its latency
    /// at the percentile.
    pub fn judge(&mut self, now_ns: u64, latency_ns: u64) -> Verdict {
        if self.done {
            return Verdict::Done;
        }
        // fio: (ios - failed) / ios; no completion at all is a failure (NaN compares false).
        let passed = self.ops > 0
            && (self.ops - self.over) as f64 / self.ops as f64 * 100.0 >= self.percentile;
        if !passed && self.depth == 1 {
            // fio's __lat_target_failed gives up without a new window: this one goes on.
            return Verdict::Go;
        }
        self.step(now_ns, latency_ns, passed);
        if !passed {
            self.back_off();
            return Verdict::Drain;
        }
        let verdict = self.raise();
        if verdict == Verdict::Go {
            self.new_window(now_ns);
        }
        verdict
    }

    /// fio's `__lat_target_failed` above depth 1.
    fn back_off(&mut self) {
        self.high = self.depth;
        if self.depth == self.low {
            self.low -= 1;
        }
        self.depth = (self.depth + self.low) / 2;
        self.stable = 0;
    }

    /// fio's `lat_target_success`.
    fn raise(&mut self) -> Verdict {
        let before = self.depth;
        self.low = self.depth;
        if self.depth + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        if self.high != self.max_depth {
            self.depth = (self.depth + self.high) / 2;
        } else {
            self.depth *= 2;
        }
        self.depth = self.depth.min(self.max_depth);
        if self.keep_adjusting || self.depth != before {
            return Verdict::Go;
        }
        if self.final_run {
            self.done = true;
            return Verdict::Done;
        }
        self.final_run = true;
        Verdict::Drain
    }

    pub fn result(&self, worker: u32) -> LatencySearchResult {
        LatencySearchResult {
            target: String::new(),
            worker,
            target_latency_ns: self.target_ns,
            window_ns: self.window_ns,
            percentile: self.percentile,
            queue_depth: self.depth,
            found: self.found(),
            steps: self.steps.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
