//! The stored summary of one run: what was run, what it measured, per target, per operation
//! kind and in total, with how storlab itself fared. Written as `summary.json` and into the
//! results store; reports read it back, never live state.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use storlab_model::op::ResultKind;
use storlab_record::EndReason;
use storlab_record::summary::LatencySummary;

use crate::events::Event;

/// Whether a run measured what it was asked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Ran to its bounds.
    Complete,
    /// Stopped early (Ctrl-C, or an error with stop-on-error): what was measured is kept.
    Partial,
    /// Could not run (a target failed to open); nothing measured.
    Failed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
        }
    }
}

/// One operation kind's results.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KindResult {
    pub ops: u64,
    pub bytes: u64,
    /// Successful operations that found no data (a get of a missing key), among `ops`.
    #[serde(default)]
    pub misses: u64,
    /// Successful operations per second of measured time.
    pub rate_ops: f64,
    /// Bytes moved per second of measured time.
    pub rate_bytes: f64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Time from submission to completion.
    pub service_latency: LatencySummary,
    /// Time from the intended start (open loop only): includes waiting caused by a slow target.
    pub intended_latency: Option<LatencySummary>,
}

/// One target's results (or the total over all targets).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TargetResult {
    pub name: String,
    pub target_type: String,
    /// The client host whose connections the target used (the plan's `client`; empty for
    /// the total and in results stored before clients existed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client: String,
    pub workload: String,
    /// The workload's type: `block`, `db-bench`, `ycsb-load`, `ycsb-run` or `pgbench` (none
    /// for the total).
    #[serde(default, skip_serializing_if = "ResultKind::is_unknown")]
    pub workload_type: ResultKind,
    pub threads: u32,
    pub queue_depth: u32,
    pub block_bytes: u64,
    pub ops: u64,
    pub bytes: u64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub errors: u64,
    /// Open loop with a latency limit: intended starts in measurement that were not sent,
    /// already further behind than the limit when their turn came (pgbench's skipped
    /// transactions). Neither operations nor errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_starts: u64,
    /// The target's own measured time, when it is not the run's: from its own start of
    /// measurement (the run's plus `start-offset-seconds`) to its last worker's last
    /// completion. Set for a target that started late, and for one that finished before the
    /// run did (operation-bounded with several targets, or beside a target that started
    /// late). Its rates are over this time (the run's `measured-seconds` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_seconds: Option<f64>,
    /// The target's workers started this long after the run (its workload's `start-delay`,
    /// fio's `startdelay`), seconds: its measurement started that long after the run's, at
    /// `start-offset-seconds` on the run's timeline (none: it started with the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset_seconds: Option<f64>,
    /// Service latency over all operation kinds.
    pub service_latency: LatencySummary,
    pub intended_latency: Option<LatencySummary>,
    /// Per operation kind (`read`, `write`, `fsync`, ...).
    pub kinds: BTreeMap<String, KindResult>,
    /// What the target's sessions actually used, where it can differ from what was asked
    /// (`execution`: how operations overlapped; `io-uring.registered-buffers`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub session_used: BTreeMap<String, String>,
    /// Each worker's own figures (IOmeter's worker rows), in worker order; empty for the
    /// total and in results stored before they existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerResult>,
    /// The verify pass after the run (`verify = true`): blocks per class and first offsets
    /// (`kind = "block"`), or keys per class and first keys (`kind = "key-value"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<storlab_verify::Verified>,
}

impl TargetResult {
    /// Where the target was measured on its run's timeline: (start, end), seconds from the
    /// run's start of measurement; `run_measured_s` is the run's `measured-seconds`.
    pub fn window_s(&self, run_measured_s: f64) -> (f64, f64) {
        let start = self.start_offset_seconds.unwrap_or(0.0);
        (
            start,
            self.measured_seconds.map_or(run_measured_s, |s| start + s),
        )
    }

    /// The intervals (of `interval_s`) of the run's timeline that are the target's: those
    /// that start in its window ([`TargetResult::window_s`]), so neither the run's intervals
    /// before a late target started nor, of a target that ended before the run, the one its
    /// last operations completed in just after its end.
    pub fn own_intervals(&self, run_measured_s: f64, interval_s: f64) -> std::ops::Range<i64> {
        let (from_s, to_s) = self.window_s(run_measured_s);
        // A hundredth of an interval of slack: the window's ends are measured, not set.
        let first = (from_s / interval_s - 0.01).ceil().max(0.0) as i64;
        let end = if self.measured_seconds.is_some() {
            (to_s / interval_s - 0.01).ceil() as i64
        } else {
            i64::MAX
        };
        first..end.max(first)
    }
}

/// One worker's figures on its target: counts, rates over its target's measured time, and its
/// mean and maximum service latency. Exact (a sum and a maximum), with no percentiles: no
/// per-worker histogram is kept, the target's histogram merges its workers'.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkerResult {
    /// 1-based among the target's workers.
    pub worker: u32,
    pub kinds: BTreeMap<String, WorkerKindResult>,
    /// The CPUs its thread was pinned to (its workload's `cpus`), as the kernel reported them
    /// once pinned; absent when not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_cpus: Option<storlab_model::cpus::CpuList>,
}

/// One operation kind of one worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkerKindResult {
    pub ops: u64,
    pub bytes: u64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub errors: u64,
    /// Mean service latency of its successful operations, ns (0 without any).
    pub mean_latency_ns: f64,
    pub max_latency_ns: u64,
}

/// How much of the client machine storlab used.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClientUsage {
    /// CPU time of the whole storlab process from the workers' start (warm-up included) to
    /// their end, seconds.
    pub cpu_seconds: f64,
    /// CPU time of the collector thread (merging the workers' intervals, writing the
    /// timeline and the interval log) over the whole run, warm-up included, seconds.
    #[serde(default)]
    pub collector_cpu_seconds: f64,
    /// Average number of CPUs storlab kept busy: `cpu_seconds` over the wall time it was read
    /// over (the workers' start to their end, warm-up included).
    pub cpu_cores_used: f64,
    pub logical_cpus: u32,
    /// Busiest worker thread: its CPU time in its measured intervals over their wall time
    /// (1.0 = never waited); workers measured less than 10 ms are left out (0: none left).
    pub worker_busy_max: f64,
    pub worker_busy_mean: f64,
    /// storlab itself was the bottleneck: the figures measure the client, not the target.
    pub saturated: bool,
}

/// The error messages first seen in a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ErrorSample {
    pub target: String,
    pub op: String,
    pub kind: String,
    pub message: String,
}

/// Everything stored about one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunSummary {
    pub run_id: String,
    pub study: String,
    pub step: String,
    pub run_index: usize,
    pub run_count: usize,
    pub repetition: u32,
    /// The sweep point: parameter name to value.
    pub parameters: BTreeMap<String, String>,
    pub status: RunStatus,
    pub end_reason: EndReason,
    pub started_at: String,
    pub ended_at: String,
    pub warmup_seconds: f64,
    /// From the start of measurement to the last measured completion.
    pub measured_seconds: f64,
    /// The step of the clock that timed every operation, ns: the least its reading moves by
    /// (or the time a reading takes, where that is longer). A latency is the difference of
    /// two readings; a percentile a few steps long is known to a step, not to its bucket.
    /// None: a run stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_step_ns: Option<u64>,
    pub targets: Vec<TargetResult>,
    /// Over all targets (background workers excluded).
    pub total: TargetResult,
    /// Workers that ran beside a target's threads and whose figures are kept apart from it
    /// (readwhilewriting's writer), named `TARGET:writer`.
    #[serde(default)]
    pub background: Vec<TargetResult>,
    /// Software of the targets as they report it (library or server versions).
    #[serde(default)]
    pub software: BTreeMap<String, String>,
    pub client: ClientUsage,
    pub warnings: Vec<String>,
    pub events: Vec<Event>,
    /// Per study event with `recovery`: how throughput fell and came back around it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery: Vec<crate::recovery::Recovery>,
    /// Throughput between the events that ran during measurement (see `results::phases`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<crate::phases::Phase>,
    /// A run with a rate schedule: each phase's and group's measured rate and share (see
    /// `results::schedule`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::ScheduleResult>,
    /// A step with `steady-state`: whether and when it was reached (see `results::steady`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<crate::steady::SteadyStateResult>,
    pub error_samples: Vec<ErrorSample>,
    /// A distributed run (under mpirun): per rank and per host (see `results::distributed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<crate::distributed::DistributedResult>,
    /// A workload with `latency-target`: each worker's search, its answer and its windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_search: Vec<storlab_model::latency_target::LatencySearchResult>,
    /// A training workload: per target, what its emulated accelerators did and the AU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training: Vec<storlab_model::training::TrainingResult>,
    /// A checkpoint workload: per target, each checkpoint written and read, per rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoint: Vec<storlab_model::training::CheckpointResult>,
    /// What the step's `sample` events read, per series: its unit and its values' count,
    /// mean, minimum and maximum over the measurement (see `results::samples`; every value
    /// is in the run folder's `samples.csv`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub samples: BTreeMap<String, crate::samples::SeriesSummary>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunSummary {
    /// What the phases and the recovery around its events read of this run.
    pub fn outline(&self) -> crate::events::RunOutline<'_> {
        crate::events::RunOutline {
            events: &self.events,
            target_names: self.targets.iter().map(|t| t.name.clone()).collect(),
            measured_seconds: self.measured_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TargetResult;

    /// A target's intervals on its run's 1 s timeline: from its own start (after a start
    /// delay) to its own end, without the interval its last completions fell just into.
    #[test]
    fn a_targets_own_intervals_are_those_of_its_window() {
        let own = |offset: Option<f64>, secs: Option<f64>| {
            let t = TargetResult {
                start_offset_seconds: offset,
                measured_seconds: secs,
                ..Default::default()
            };
            t.own_intervals(2.0004, 1.0)
        };
        assert_eq!(own(None, None), 0..i64::MAX);
        assert_eq!(own(Some(1.0), Some(1.0004)), 1..2);
        assert_eq!(own(None, Some(1.0002)), 0..1);
        assert_eq!(own(None, Some(1.5)), 0..2);
        assert_eq!(own(Some(0.5), Some(1.0)), 1..2);
    }
}
