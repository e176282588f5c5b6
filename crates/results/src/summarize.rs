//! A run's summary, from what its workers and the collector measured: per target and in
//! total, operations, bytes, rates over the measured time, latency percentiles from merged
//! histograms, errors by kind, the client's CPU use and the warnings a reader needs (storlab
//! saturated, a partial run, a rate not kept).

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::events::Event;
use crate::summary::{
    ClientUsage, ErrorSample, KindResult, RunStatus, RunSummary, TargetResult, WorkerKindResult,
    WorkerResult,
};
use storlab_model::{ErrorKind, OpError, OpKind};
use storlab_record::summary::LatencySummary;
use storlab_record::totals::{KindTotals, WorkerKindTotals, merge};
use storlab_record::{EndReason, new_histogram};
use storlab_study::plan::{Plan, RunPlan};

/// A worker thread busier than this over the measured time means storlab was the bottleneck.
const SATURATED_BUSY: f64 = 0.9;

/// The least wall time a CPU share is taken over (a worker's, the process's) and a run judged
/// CPU-bound on, ns: below it the fixed costs of starting and ending dominate.
const CPU_JUDGED_MIN_NS: u64 = 10_000_000;

/// How one worker ended, as the summary needs it.
#[derive(Debug, Clone, Copy)]
pub struct WorkerEnd {
    /// When measurement started (run clock, ns).
    pub measure_start_ns: u64,
    /// Completion time of the last measured operation (run clock, ns).
    pub last_completion_ns: u64,
    pub end_reason: EndReason,
    /// Rotations that waited for the collector to hand an interval back (0 in a healthy
    /// run), and the time they waited, ns.
    pub spare_waits: u64,
    pub spare_wait_ns: u64,
    /// Measured intended starts skipped for being later than the latency limit.
    pub skipped_starts: u64,
}

/// What a run measured, as its summary reads it.
pub struct Measured<'a> {
    pub run_id: &'a str,
    pub started: SystemTime,
    /// The targets' workers (not background workers).
    pub workers: Vec<WorkerEnd>,
    /// Per target (then background worker), per operation kind: measured totals.
    pub totals: &'a [Vec<Option<KindTotals>>],
    /// Per worker: CPU time spent in measured intervals, ns.
    pub worker_cpu_ns: &'a [u64],
    /// Per worker: the wall time of those intervals, ns.
    pub worker_wall_ns: &'a [u64],
    /// Per worker, per operation kind: measured counts, latency sum and maximum.
    pub worker_totals: &'a [[Option<WorkerKindTotals>; OpKind::COUNT]],
    /// Per worker: its target's index (background workers: past the targets).
    pub worker_shape: &'a [u32],
    pub error_samples: &'a [(u32, OpKind, OpError)],
    /// CPU time of the whole process over the run, ns.
    pub cpu_used_ns: u64,
    /// The wall time `cpu_used_ns` was read over (the workers' start to their end), ns.
    pub cpu_wall_ns: u64,
    /// CPU time of the collector thread over the whole run (warm-up included), ns.
    pub collector_cpu_ns: u64,
    /// When the run (warm-up first) started on the run clock, ns.
    pub start_ns: u64,
    /// The run clock's step, ns (0: not known).
    pub clock_step_ns: u64,
    pub background_names: &'a [String],
    /// Per target: what its sessions actually used (see `Session::used`).
    pub session_used: Vec<BTreeMap<String, String>>,
    /// Per worker: the CPUs its thread was pinned to, as read back (None: not pinned).
    pub worker_cpus: Vec<Option<storlab_model::cpus::CpuList>>,
}

pub fn failed_summary(
    run_id: &str,
    plan: &Plan,
    run: &RunPlan,
    started: SystemTime,
    why: &str,
) -> RunSummary {
    RunSummary {
        run_id: run_id.to_string(),
        study: plan.study.clone(),
        step: run.step.clone(),
        run_index: run.index,
        run_count: plan.runs.len(),
        repetition: run.repetition,
        parameters: run.parameters.clone(),
        status: RunStatus::Failed,
        end_reason: EndReason::NotStarted,
        started_at: crate::rfc3339(started),
        ended_at: crate::rfc3339(SystemTime::now()),
        warmup_seconds: run.warmup.0.as_secs_f64(),
        measured_seconds: 0.0,
        clock_step_ns: None,
        targets: Vec::new(),
        total: TargetResult::default(),
        background: Vec::new(),
        software: BTreeMap::new(),
        client: ClientUsage::default(),
        warnings: vec![format!("the run could not start: {why}")],
        events: Vec::new(),
        recovery: Vec::new(),
        phases: Vec::new(),
        schedule: None,
        distributed: None,
        latency_search: Vec::new(),
        training: Vec::new(),
        checkpoint: Vec::new(),
        samples: BTreeMap::new(),
        steady_state: None,
        error_samples: Vec::new(),
    }
}

fn kind_result(k: &KindTotals, secs: f64) -> KindResult {
    let mut errors_by_kind = BTreeMap::new();
    for e in ErrorKind::ALL {
        let n = k.errors[e as usize];
        if n > 0 {
            errors_by_kind.insert(e.name().to_string(), n);
        }
    }
    KindResult {
        ops: k.ops,
        bytes: k.bytes,
        misses: k.misses,
        rate_ops: k.ops as f64 / secs,
        rate_bytes: k.bytes as f64 / secs,
        errors: k.error_count(),
        errors_by_kind,
        service_latency: LatencySummary::from_histogram(&k.service),
        intended_latency: k.intended.as_ref().map(LatencySummary::from_histogram),
    }
}

/// Builds one target's (or the total's) result from its kinds' totals.
fn target_result(name: &str, kinds: &[&KindTotals], names: &[OpKind], secs: f64) -> TargetResult {
    let mut all = new_histogram::<u64>();
    let mut all_intended: Option<hdrhistogram::Histogram<u64>> = None;
    let mut r = TargetResult {
        name: name.to_string(),
        ..Default::default()
    };
    for (k, kind) in kinds.iter().zip(names) {
        merge(&mut all, &k.service);
        if let Some(h) = &k.intended {
            merge(all_intended.get_or_insert_with(new_histogram), h);
        }
        r.ops += k.ops;
        r.bytes += k.bytes;
        r.errors += k.error_count();
        r.kinds
            .insert(kind.name().to_string(), kind_result(k, secs));
    }
    r.rate_ops = r.ops as f64 / secs;
    r.rate_bytes = r.bytes as f64 / secs;
    r.service_latency = LatencySummary::from_histogram(&all);
    r.intended_latency = all_intended.as_ref().map(LatencySummary::from_histogram);
    r
}

/// The figures of target `ti`'s workers, in worker order.
fn worker_results(
    ti: usize,
    worker_shape: &[u32],
    worker_totals: &[[Option<WorkerKindTotals>; OpKind::COUNT]],
    worker_cpus: &[Option<storlab_model::cpus::CpuList>],
    secs: f64,
) -> Vec<WorkerResult> {
    worker_shape
        .iter()
        .zip(worker_totals)
        .enumerate()
        .filter(|(_, (shape, _))| **shape as usize == ti)
        .enumerate()
        .map(|(n, (w, (_, kinds)))| WorkerResult {
            worker: n as u32 + 1,
            pinned_cpus: worker_cpus.get(w).cloned().flatten(),
            kinds: OpKind::ALL
                .into_iter()
                .filter_map(|k| {
                    let t = kinds[k as usize]?;
                    let mean = if t.ops == 0 {
                        0.0
                    } else {
                        t.service_sum_ns as f64 / t.ops as f64
                    };
                    Some((
                        k.name().to_string(),
                        WorkerKindResult {
                            ops: t.ops,
                            bytes: t.bytes,
                            rate_ops: t.ops as f64 / secs,
                            rate_bytes: t.bytes as f64 / secs,
                            errors: t.errors,
                            mean_latency_ns: mean,
                            max_latency_ns: t.service_max_ns,
                        },
                    ))
                })
                .collect(),
        })
        .collect()
}

/// The measured span of a run: when its first worker started measuring (run clock, ns),
/// and for how long, in seconds (never 0).
#[derive(Clone, Copy)]
struct Span {
    measure_start: u64,
    secs: f64,
}

pub fn summarize(plan: &Plan, run: &RunPlan, m: &Measured<'_>) -> RunSummary {
    let outcomes = &m.workers;
    let measure_start = outcomes
        .iter()
        .map(|o| o.measure_start_ns)
        .min()
        .unwrap_or(m.start_ns);
    let end_reason = end_reason(outcomes);
    let max_delay_ns = run
        .targets
        .iter()
        .map(|t| nanos(t.workload.start_delay()))
        .max()
        .unwrap_or(0);
    // A run bounded by time measured for its whole window, whether or not an operation
    // completed near its end: a paced or thinking worker's last one may come well before.
    let measure_end = outcomes
        .iter()
        .map(|o| o.last_completion_ns)
        .max()
        .unwrap_or(measure_start)
        .max(window_end(
            run,
            end_reason,
            measure_start.saturating_add(max_delay_ns),
        ));
    let measured_ns = measure_end.saturating_sub(measure_start);
    let span = Span {
        measure_start,
        secs: (measured_ns as f64 / 1e9).max(1e-9),
    };
    let secs = span.secs;
    let status = match end_reason {
        EndReason::Duration | EndReason::Ops | EndReason::SteadyState => RunStatus::Complete,
        _ => RunStatus::Partial,
    };
    let (targets, total) = target_results(run, m, end_reason, span);
    let background = background_results(run, m, secs);
    let (client, mut warnings) = client_usage(run, m, measured_ns);
    let outcome = (status, end_reason);
    run_warnings(run, m, &targets, &total, outcome, secs, &mut warnings);
    let warmup_s = run.warmup.0.as_secs_f64();
    let events = vec![
        Event::mark(-warmup_s, "warmup-start", ""),
        Event::mark(0.0, "measure-start", ""),
        Event::mark(
            secs,
            "measure-end",
            format!("{end_reason:?}").to_lowercase(),
        ),
    ];
    RunSummary {
        run_id: m.run_id.to_string(),
        study: plan.study.clone(),
        step: run.step.clone(),
        run_index: run.index,
        run_count: plan.runs.len(),
        repetition: run.repetition,
        parameters: run.parameters.clone(),
        status,
        end_reason,
        started_at: crate::rfc3339(m.started),
        ended_at: crate::rfc3339(SystemTime::now()),
        warmup_seconds: warmup_s,
        measured_seconds: secs,
        clock_step_ns: (m.clock_step_ns > 0).then_some(m.clock_step_ns),
        targets,
        total,
        background,
        software: BTreeMap::new(),
        client,
        warnings,
        events,
        recovery: Vec::new(),
        phases: Vec::new(),
        schedule: None,
        distributed: None,
        latency_search: Vec::new(),
        training: Vec::new(),
        checkpoint: Vec::new(),
        samples: BTreeMap::new(),
        steady_state: None,
        error_samples: error_samples(run, m),
    }
}

/// Why the run ended, from its workers' ends: an error first, then an interruption, steady
/// state, operations done, time.
fn nanos(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// When a window of measurement opened at `start_ns` ends: its `duration` later for a run
/// that ended on its duration, else `start_ns` (the last completion decides).
fn window_end(run: &RunPlan, end_reason: EndReason, start_ns: u64) -> u64 {
    match (end_reason, run.duration) {
        (EndReason::Duration, Some(d)) => start_ns.saturating_add(nanos(d.0)),
        _ => start_ns,
    }
}

fn end_reason(outcomes: &[WorkerEnd]) -> EndReason {
    if outcomes.iter().any(|o| o.end_reason == EndReason::Error) {
        EndReason::Error
    } else if outcomes
        .iter()
        .any(|o| o.end_reason == EndReason::Interrupted)
    {
        EndReason::Interrupted
    } else if outcomes
        .iter()
        .any(|o| o.end_reason == EndReason::SteadyState)
    {
        EndReason::SteadyState
    } else if outcomes.iter().any(|o| o.end_reason == EndReason::Ops) {
        EndReason::Ops
    } else {
        EndReason::Duration
    }
}

/// Shape `ti`'s operation kinds, and their measured totals.
fn kinds_of(totals: &[Vec<Option<KindTotals>>], ti: usize) -> (Vec<OpKind>, Vec<&KindTotals>) {
    let present: Vec<OpKind> = OpKind::ALL
        .into_iter()
        .filter(|k| totals[ti][*k as usize].is_some())
        .collect();
    let kinds: Vec<&KindTotals> = present
        .iter()
        .filter_map(|k| totals[ti][*k as usize].as_ref())
        .collect();
    (present, kinds)
}

/// Per target its result, and the total over them.
fn target_results(
    run: &RunPlan,
    m: &Measured<'_>,
    end_reason: EndReason,
    span: Span,
) -> (Vec<TargetResult>, TargetResult) {
    let (outcomes, worker_shape) = (&m.workers, m.worker_shape);
    let mut targets = Vec::new();
    let mut total_kinds: BTreeMap<OpKind, KindTotals> = BTreeMap::new();
    // A target that starts late (`start-delay`) lengthens the run past the others' windows.
    let delayed = run
        .targets
        .iter()
        .any(|t| !t.workload.start_delay().is_zero());
    for (ti, t) in run.targets.iter().enumerate() {
        let (present, kinds) = kinds_of(m.totals, ti);
        let of_target = |w: &usize| worker_shape.get(*w) == Some(&(ti as u32));
        let delay_ns = nanos(t.workload.start_delay());
        // Each target is measured over its own window, from its own start of measurement
        // (after its start delay) to its last completion, when that is not the run's: a
        // target that started late, or that finished before the others (operation-bounded
        // with several targets, or beside a target that started late), did nothing outside it.
        let own_secs = if delayed || (end_reason == EndReason::Ops && run.targets.len() > 1) {
            let own_start = span.measure_start.saturating_add(delay_ns);
            outcomes
                .iter()
                .enumerate()
                .filter(|(w, _)| of_target(w))
                .map(|(_, o)| o.last_completion_ns)
                .max()
                .map(|end| end.max(window_end(run, end_reason, own_start)))
                .map(|end| (end.saturating_sub(own_start) as f64 / 1e9).max(1e-9))
                .filter(|s| delay_ns > 0 || *s < span.secs)
        } else {
            None
        };
        let target_secs = own_secs.unwrap_or(span.secs);
        let mut r = target_result(&t.name, &kinds, &present, target_secs);
        r.measured_seconds = own_secs;
        r.start_offset_seconds = (delay_ns > 0).then_some(delay_ns as f64 / 1e9);
        r.target_type = t.config.type_name().to_string();
        r.client = t.client.clone();
        r.workload = t.workload_name.clone();
        r.workload_type = t.workload.result_type();
        r.threads = t.workload.threads();
        r.queue_depth = t.workload.queue_depth();
        r.block_bytes = t.workload.block_bytes();
        r.session_used = m.session_used.get(ti).cloned().unwrap_or_default();
        r.workers = worker_results(
            ti,
            worker_shape,
            m.worker_totals,
            &m.worker_cpus,
            target_secs,
        );
        r.skipped_starts = outcomes
            .iter()
            .enumerate()
            .filter(|(w, _)| of_target(w))
            .map(|(_, o)| o.skipped_starts)
            .sum();
        targets.push(r);
        for (k, kt) in present.iter().zip(kinds) {
            total_kinds
                .entry(*k)
                .or_insert_with(|| KindTotals::new(false))
                .add_totals(kt);
        }
    }
    let names: Vec<OpKind> = total_kinds.keys().copied().collect();
    let refs: Vec<&KindTotals> = total_kinds.values().collect();
    let mut total = target_result("total", &refs, &names, span.secs);
    total.threads = run.targets.iter().map(|t| t.workload.threads()).sum();
    (targets, total)
}

/// Per background worker (readwhilewriting's writer): its result.
fn background_results(run: &RunPlan, m: &Measured<'_>, secs: f64) -> Vec<TargetResult> {
    m.background_names
        .iter()
        .enumerate()
        .map(|(bi, name)| {
            let (present, kinds) = kinds_of(m.totals, run.targets.len() + bi);
            let mut r = target_result(name, &kinds, &present, secs);
            r.threads = 1;
            r.queue_depth = 1;
            r
        })
        .collect()
}

/// The client's CPU shares, each over the wall time its CPU time was read over.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuShares {
    /// The busiest and the mean worker thread: CPU time in its measured intervals over their
    /// wall time; workers measured less than [`CPU_JUDGED_MIN_NS`] are left out.
    busy_max: f64,
    busy_mean: f64,
    /// The process's CPU time over the wall time from the workers' start to their end.
    cores_used: f64,
    /// The run was long enough to judge it CPU-bound.
    judged: bool,
}

impl CpuShares {
    /// Never a share over another window than its CPU time's: a short run's fixed costs
    /// (reading the clocks, the first and last operation's bookkeeping) divided by a shorter
    /// window gave a thread on the CPU 456% of the time.
    fn of(m: &Measured<'_>, measured_ns: u64) -> CpuShares {
        let busy: Vec<f64> = m
            .worker_cpu_ns
            .iter()
            .zip(m.worker_wall_ns)
            .filter(|&(_, &wall)| wall >= CPU_JUDGED_MIN_NS)
            .map(|(&cpu, &wall)| cpu as f64 / wall as f64)
            .collect();
        CpuShares {
            busy_max: busy.iter().copied().fold(0.0, f64::max),
            busy_mean: if busy.is_empty() {
                0.0
            } else {
                busy.iter().sum::<f64>() / busy.len() as f64
            },
            cores_used: m.cpu_used_ns as f64 / m.cpu_wall_ns.max(1) as f64,
            judged: measured_ns >= CPU_JUDGED_MIN_NS && m.cpu_wall_ns >= CPU_JUDGED_MIN_NS,
        }
    }
}

/// The client's CPU use over the run, and the warnings it calls for (storlab saturated, or
/// the CPU the limit of an embedded engine).
fn client_usage(run: &RunPlan, m: &Measured<'_>, measured_ns: u64) -> (ClientUsage, Vec<String>) {
    let logical_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let CpuShares {
        busy_max,
        busy_mean,
        cores_used,
        judged,
    } = CpuShares::of(m, measured_ns);
    let cpu_bound =
        judged && (busy_max >= SATURATED_BUSY || cores_used >= 0.9 * logical_cpus as f64);
    // An embedded engine (RocksDB) does its work on the worker threads: busy workers then
    // mean the machine's CPU is the limit, which is part of what is measured, not a client
    // overhead.
    let in_process = run.targets.iter().any(|t| t.config.in_process());
    let saturated = cpu_bound && !in_process;
    let mut warnings = Vec::new();
    if cpu_bound && in_process {
        warnings.push(format!(
            "CPU-bound: the busiest worker thread was on the CPU {:.0}% of the measured time and the process used {:.2} of {} CPUs. With an embedded engine that is mostly the engine's own work on those threads: the figures show this machine's CPU as the limit, not only its storage.",
            busy_max * 100.0,
            cores_used,
            logical_cpus
        ));
    }
    if saturated {
        warnings.push(format!(
            "storlab itself was saturated: its busiest worker thread was on the CPU {:.0}% of the measured time and the process used {:.2} of {} CPUs. These figures measure the client (storlab and the kernel work on its threads), not only the target; add threads or use a faster client machine.",
            busy_max * 100.0,
            cores_used,
            logical_cpus
        ));
    }
    let client = ClientUsage {
        cpu_seconds: m.cpu_used_ns as f64 / 1e9,
        collector_cpu_seconds: m.collector_cpu_ns as f64 / 1e9,
        cpu_cores_used: cores_used,
        logical_cpus,
        worker_busy_max: busy_max,
        worker_busy_mean: busy_mean,
        saturated,
    };
    (client, warnings)
}

/// The warnings about the run itself: partial, a rate not kept, starts skipped for the
/// latency limit, the collector behind, nothing completed.
fn run_warnings(
    run: &RunPlan,
    m: &Measured<'_>,
    targets: &[TargetResult],
    total: &TargetResult,
    (status, end_reason): (RunStatus, EndReason),
    secs: f64,
    warnings: &mut Vec<String>,
) {
    if status == RunStatus::Partial {
        warnings.push(format!(
            "partial run: measurement stopped early ({}); the figures cover {:.2} s",
            match end_reason {
                EndReason::Interrupted => "interrupted",
                _ => "stopped on error",
            },
            secs
        ));
    }
    for (t, r) in run.targets.iter().zip(targets) {
        if let Some(rate) = t.workload.rate_per_thread() {
            let wanted = rate * t.workload.threads() as f64;
            if status == RunStatus::Complete && r.rate_ops + r.errors as f64 / secs < 0.95 * wanted
            {
                warnings.push(format!(
                    "target `{}` did not keep the requested rate: {:.0} of {:.0} ops/s. The latency from intended start shows the waiting this caused.",
                    t.name, r.rate_ops, wanted
                ));
            }
        }
    }
    let skipped: u64 = targets.iter().map(|t| t.skipped_starts).sum();
    if skipped > 0 {
        let limit = run
            .schedule
            .as_ref()
            .and_then(|s| s.latency_limit)
            .map(|d| storlab_model::units::format_duration(d.0))
            .unwrap_or_default();
        warnings.push(format!(
            "latency limit: {skipped} intended starts were skipped, already more than {limit} late when their turn came (pgbench's skipped transactions); they are neither operations nor errors"
        ));
    }
    let waits: u64 = m.workers.iter().map(|o| o.spare_waits).sum();
    if waits > 0 {
        let waited_ns: u64 = m.workers.iter().map(|o| o.spare_wait_ns).sum();
        warnings.push(format!(
            "the collector fell behind: workers waited {waits} times for it to hand an interval back, {} summed over the workers (a worker issued nothing while it waited; operations it had in flight include the wait)",
            storlab_model::units::format_ns(waited_ns as f64)
        ));
    }
    if total.ops == 0 && status == RunStatus::Complete {
        warnings.push("no operation completed successfully during measurement".into());
    }
}

/// The first errors the workers sampled, with their target's (or background worker's) name.
fn error_samples(run: &RunPlan, m: &Measured<'_>) -> Vec<ErrorSample> {
    m.error_samples
        .iter()
        .map(|(t, k, e)| ErrorSample {
            target: run
                .targets
                .get(*t as usize)
                .map(|t| t.name.clone())
                .or_else(|| {
                    m.background_names
                        .get(*t as usize - run.targets.len())
                        .cloned()
                })
                .unwrap_or_default(),
            op: k.name().into(),
            kind: e.kind.name().into(),
            message: e.message(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's CPU readings: per worker CPU and wall ns, the process's CPU and wall ns.
    fn measured<'a>(cpu: &'a [u64], wall: &'a [u64], process: (u64, u64)) -> Measured<'a> {
        Measured {
            run_id: "r",
            started: SystemTime::UNIX_EPOCH,
            workers: Vec::new(),
            totals: &[],
            worker_cpu_ns: cpu,
            worker_wall_ns: wall,
            worker_totals: &[],
            worker_shape: &[],
            error_samples: &[],
            cpu_used_ns: process.0,
            cpu_wall_ns: process.1,
            collector_cpu_ns: 0,
            start_ns: 0,
            clock_step_ns: 0,
            background_names: &[],
            session_used: Vec::new(),
            worker_cpus: Vec::new(),
        }
    }

    #[test]
    fn cpu_shares_are_over_their_own_window_and_a_short_run_is_not_judged() {
        // A job of 8 I/Os: 40 µs of a worker's CPU in its 9 µs of intervals is no share.
        let short = CpuShares::of(&measured(&[40_000], &[9_000], (150_000, 90_000)), 9_000);
        assert_eq!(
            (short.busy_max, short.busy_mean, short.judged),
            (0.0, 0.0, false)
        );
        // A second measured: workers at 80% and 40%, one that ran 5 µs left out; the
        // process 1.5 s of CPU in 1.25 s.
        let s = 1_000_000_000;
        let long = CpuShares::of(
            &measured(
                &[800_000_000, 400_000_000, 5_000],
                &[s, s, 5_000],
                (1_500_000_000, 1_250_000_000),
            ),
            s,
        );
        assert!(long.judged);
        assert!((long.busy_max - 0.8).abs() < 1e-12, "{long:?}");
        assert!((long.busy_mean - 0.6).abs() < 1e-12, "{long:?}");
        assert!((long.cores_used - 1.2).abs() < 1e-12, "{long:?}");
    }
}
