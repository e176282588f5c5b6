//! Running a plan: for each run, prepare its targets, start one thread per worker (each owning
//! its session, operation source and recorder), collect their intervals, and store the results
//! (folder and results store) before the next run starts.
//!
//! Ctrl-C stops issuing, lets what is in flight finish, and stores the run as partial; later
//! runs of the study are skipped. A second Ctrl-C exits at once (see `cli`).

pub mod collector;
pub mod console;
pub mod worker;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, SystemTime};

use crate::record::summary::LatencySummary;
use crate::record::{ErrorKind, Interval, OpKind, Recorder, new_histogram, process_cpu_ns};
use crate::results::store::Store;
use crate::results::summary::{
    ClientUsage, ErrorSample, Event, KindResult, RunStatus, RunSummary, TargetResult,
};
use crate::results::{RunFolder, system};
use crate::study::plan::{Plan, RunPlan};
use crate::targets::{PrepareOptions, Region, SessionParams, TargetError};
use collector::{KindTotals, Sinks, TargetShape, collect};
use console::Console;
use worker::{Clock, Control, EndReason, StartGate, Worker, WorkerConfig, WorkerOutcome};

/// Spare intervals each worker starts with, so that rotation never waits or allocates.
const SPARES_PER_WORKER: usize = 2;

/// A worker thread busier than this over the measured time means storlab was the bottleneck.
const SATURATED_BUSY: f64 = 0.9;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("target `{target}`: {source}")]
    Target { target: String, source: TargetError },
    #[error("writing results to {path}: {source}")]
    Results {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("results store: {0}")]
    Store(#[from] crate::results::store::StoreError),
    #[error("starting a worker thread: {0}")]
    Thread(std::io::Error),
}

/// How a plan is run.
pub struct RunOptions {
    pub results_dir: PathBuf,
    pub allow_destroy: Vec<PathBuf>,
    /// Set by the Ctrl-C handler.
    pub interrupted: Arc<AtomicBool>,
    pub console: Console,
    /// The command line, for the disclosure.
    pub command_line: String,
}

/// What running a plan produced.
pub struct StudyOutcome {
    pub folder: PathBuf,
    pub summaries: Vec<RunSummary>,
    pub interrupted: bool,
}

/// Runs every run of the plan in order and stores each one's results.
pub fn run_plan(plan: &Plan, opts: &RunOptions) -> Result<StudyOutcome, RunError> {
    let stamp = crate::results::timestamp_for_path(SystemTime::now());
    let study_folder = opts
        .results_dir
        .join(format!("{}-{stamp}", crate::results::slug(&plan.study)));
    crate::results::write_study_files(&study_folder, plan).map_err(|source| RunError::Results {
        path: study_folder.clone(),
        source,
    })?;
    let mut store = Store::open(&opts.results_dir)?;
    let mut summaries = Vec::new();
    let mut prepared: BTreeMap<String, Region> = BTreeMap::new();
    let result: Result<(), RunError> = (|| {
        for run in &plan.runs {
            if opts.interrupted.load(Ordering::Relaxed) {
                break;
            }
            let summary = run_one(plan, run, opts, &study_folder, &mut store, &mut prepared)?;
            opts.console.run_finished(&summary);
            summaries.push(summary);
        }
        Ok(())
    })();
    let mut seen = std::collections::HashSet::new();
    for t in plan.runs.iter().flat_map(|r| &r.targets) {
        if seen.insert(&t.name) {
            t.config.finish();
        }
    }
    result?;
    let comparison = crate::results::comparison::compare(&plan.study, &summaries);
    if !comparison.steps.is_empty() {
        let path = study_folder.join("comparison.json");
        let text = serde_json::to_string_pretty(&comparison).map_err(std::io::Error::other);
        text.and_then(|t| std::fs::write(&path, t + "\n"))
            .map_err(|source| RunError::Results { path, source })?;
    }
    Ok(StudyOutcome {
        folder: study_folder,
        summaries,
        interrupted: opts.interrupted.load(Ordering::Relaxed),
    })
}

fn run_one(
    plan: &Plan,
    run: &RunPlan,
    opts: &RunOptions,
    study_folder: &Path,
    store: &mut Store,
    prepared: &mut BTreeMap<String, Region>,
) -> Result<RunSummary, RunError> {
    let mut events_before = Vec::new();
    if run.drop_caches {
        events_before.push(drop_page_cache());
    }
    // Prepare every target (safety checks, layout, open databases) before anything starts.
    let mut regions = Vec::new();
    let mut handles_prepared = Vec::new();
    let mut software = BTreeMap::new();
    for t in &run.targets {
        let popts = PrepareOptions {
            allow_destroy: opts.allow_destroy.clone(),
            writes: t.workload.writes(),
            min_size_bytes: t.workload.block_bytes(),
            fresh: t.workload.fresh(),
            verbose: true,
            ycsb: t.workload.ycsb(),
        };
        let p = t
            .config
            .prepare(&popts)
            .map_err(|source| RunError::Target {
                target: t.name.clone(),
                source,
            })?;
        prepared.insert(t.name.clone(), p.region);
        regions.push(p.region);
        for (name, version) in t.config.software(&p) {
            software.insert(format!("{}.{name}", t.name), version);
        }
        handles_prepared.push(p);
    }
    let handles_prepared = &handles_prepared;

    let started = SystemTime::now();
    let run_id = format!(
        "{}-r{:03}",
        study_folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("run"),
        run.index
    );
    let folder =
        RunFolder::create(study_folder, run, plan).map_err(|source| RunError::Results {
            path: study_folder.to_path_buf(),
            source,
        })?;
    let paths: Vec<PathBuf> = run.targets.iter().flat_map(|t| t.config.paths()).collect();
    let mut sys = system::capture(&paths);
    sys.command_line = Some(crate::results::redact(&opts.command_line));
    sys.target_software = run
        .targets
        .iter()
        .zip(handles_prepared)
        .flat_map(|(t, p)| {
            let reported = t.config.software(p);
            let list: Vec<(String, String)> = if reported.is_empty() {
                vec![("storlab built-in".into(), sys.storlab_version.clone())]
            } else {
                reported
            };
            list.into_iter()
                .map(|(software, version)| system::TargetSoftware {
                    target: t.name.clone(),
                    target_type: t.config.type_name().to_string(),
                    software,
                    version,
                })
        })
        .collect();
    folder
        .write_json("system.json", &sys)
        .map_err(|source| RunError::Results {
            path: folder.path.clone(),
            source,
        })?;
    store.begin_run(
        &run_id,
        &plan.study,
        run,
        plan.runs.len(),
        &folder.path,
        started,
    )?;

    // Workers: one channel to the collector, one spare channel back to each worker. Targets'
    // threads come first, then background workers (readwhilewriting's writer), whose figures
    // go to shapes after the targets' and who stop when the targets' threads have stopped.
    let interrupted = opts.interrupted.clone();
    let control = Control::new(interrupted.clone());
    let background_control = Control::new(interrupted);
    let backgrounds: Vec<(usize, crate::workload::Background)> = run
        .targets
        .iter()
        .enumerate()
        .filter_map(|(ti, t)| t.workload.background(t.seed).map(|b| (ti, b)))
        .collect();
    let total_workers: usize = run
        .targets
        .iter()
        .map(|t| t.workload.threads() as usize)
        .sum::<usize>()
        + backgrounds.len();
    let gate = StartGate::new(total_workers);
    let clock = Clock::new();
    let interval_ns = run.interval.0.as_nanos() as u64;
    let (tx, rx) = sync_channel::<Box<Interval>>(total_workers * (SPARES_PER_WORKER + 2));
    let mut spare_senders = Vec::new();
    let mut worker_target = Vec::new();
    let mut shapes = Vec::new();
    let mut worker_inputs = Vec::new();
    let mut worker_index = 0u32;
    let mut new_worker =
        |shape: usize, kinds: &[OpKind], open: bool, worker_index: u32| -> Recorder {
            let (stx, srx) = sync_channel(SPARES_PER_WORKER + 2);
            for _ in 0..SPARES_PER_WORKER {
                let _ = stx.try_send(Interval::new(worker_index, shape as u32, kinds, open));
            }
            spare_senders.push(stx);
            worker_target.push(shape as u32);
            Recorder::new(
                Interval::new(worker_index, shape as u32, kinds, open),
                tx.clone(),
                srx,
            )
        };
    let params_for = |ti: usize, worker: u32| {
        let w = &run.targets[ti].workload;
        let block = w.as_block();
        SessionParams {
            worker,
            writes: w.writes(),
            region: regions[ti],
            queue_depth: w.queue_depth(),
            block_bytes: w.block_bytes() as u32,
            random_data: block.is_none_or(|b| b.write_data == crate::workload::WriteData::Random),
            pattern: block.map_or(0, |b| b.write_pattern),
            seed: run.targets[ti].seed,
            kv: w.kv_shape(),
            ycsb: w.ycsb(),
        }
    };
    for (ti, t) in run.targets.iter().enumerate() {
        let w = &t.workload;
        let kinds = w.kinds();
        let open = w.rate_per_thread().is_some();
        shapes.push(TargetShape {
            name: t.name.clone(),
            kinds: kinds.clone(),
            open_loop: open,
            background: false,
        });
        let threads = w.threads();
        let ops = run.ops.or(w.default_ops());
        let duration = run.duration.map(|d| d.0.as_nanos() as u64).or(match w {
            crate::workload::Workload::Ycsb(y) => {
                y.max_execution_seconds.map(|s| s * 1_000_000_000)
            }
            _ => None,
        });
        let mut sources = w.sources(regions[ti], t.seed).into_iter();
        for thread in 0..threads {
            let recorder = new_worker(ti, &kinds, open, worker_index);
            let max_ops =
                ops.map(|n| n / threads as u64 + u64::from((thread as u64) < n % threads as u64));
            let config = WorkerConfig {
                worker: worker_index,
                queue_depth: w.queue_depth(),
                interval_ns,
                warmup_ns: run.warmup.0.as_nanos() as u64,
                duration_ns: duration,
                max_ops,
                rate_ops: w.rate_per_thread(),
                stop_on_error: run.stop_on_error,
            };
            let source = sources.next().expect("one source per thread");
            worker_inputs.push((
                ti,
                config,
                params_for(ti, worker_index),
                recorder,
                source,
                false,
            ));
            worker_index += 1;
        }
    }
    let mut background_names = Vec::new();
    for (bi, (ti, b)) in backgrounds.into_iter().enumerate() {
        let shape = run.targets.len() + bi;
        let name = format!("{}:writer", run.targets[ti].name);
        let open = b.rate_ops.is_some();
        shapes.push(TargetShape {
            name: name.clone(),
            kinds: b.kinds.clone(),
            open_loop: open,
            background: true,
        });
        background_names.push(name);
        let recorder = new_worker(shape, &b.kinds, open, worker_index);
        let config = WorkerConfig {
            worker: worker_index,
            queue_depth: 1,
            interval_ns,
            warmup_ns: run.warmup.0.as_nanos() as u64,
            duration_ns: None,
            max_ops: None,
            rate_ops: b.rate_ops,
            stop_on_error: false,
        };
        worker_inputs.push((
            ti,
            config,
            params_for(ti, worker_index),
            recorder,
            b.source,
            true,
        ));
        worker_index += 1;
    }
    drop(new_worker);
    drop(tx);

    let timeline =
        File::create(folder.path.join("timeline.csv")).map_err(|source| RunError::Results {
            path: folder.path.join("timeline.csv"),
            source,
        })?;
    let hdr =
        File::create(folder.path.join("histograms.hlog")).map_err(|source| RunError::Results {
            path: folder.path.join("histograms.hlog"),
            source,
        })?;
    let warmup = run.warmup.0;
    let measure_start_wall = started + warmup;
    let console = &opts.console;
    let n_runs = plan.runs.len();

    let mut open_errors: Vec<(String, TargetError)> = Vec::new();
    let mut outcomes: Vec<WorkerOutcome> = Vec::new();
    let mut background_outcomes: Vec<WorkerOutcome> = Vec::new();
    let mut cpu_at_start = 0u64;
    let mut start_ns = 0u64;
    let collected = std::thread::scope(|scope| -> Result<_, RunError> {
        let collector = std::thread::Builder::new()
            .name("storlab-collector".into())
            .spawn_scoped(scope, || {
                let sinks = Sinks {
                    timeline: BufWriter::new(timeline),
                    hdr_log: BufWriter::new(hdr),
                    measure_start_wall,
                };
                collect(
                    rx,
                    spare_senders,
                    worker_target,
                    shapes,
                    interval_ns,
                    sinks,
                    |p| console.progress(run, n_runs, &p, interval_ns),
                )
            })
            .map_err(RunError::Thread)?;
        let mut handles = Vec::new();
        for (ti, config, params, recorder, source, background) in worker_inputs {
            let t = &run.targets[ti];
            let gate = &gate;
            let control = if background {
                &background_control
            } else {
                &control
            };
            let prepared = &handles_prepared[ti];
            let clock = clock.clone();
            let h = std::thread::Builder::new()
                .name(format!("storlab-w{}", config.worker))
                .spawn_scoped(scope, move || {
                    let worker = Worker {
                        config,
                        clock,
                        control,
                        gate,
                        source,
                        recorder,
                    };
                    match t.config.open(prepared, &params, worker) {
                        Ok(outcome) => Ok(outcome),
                        Err(e) => {
                            gate.fail();
                            Err((t.name.clone(), e))
                        }
                    }
                })
                .map_err(RunError::Thread)?;
            handles.push((background, h));
        }
        let ok = gate.release(|| {
            cpu_at_start = process_cpu_ns();
            start_ns = clock.now_ns() + 100_000;
            start_ns
        });
        if !ok {
            control.stop.store(true, Ordering::Relaxed);
        }
        // The targets' threads first; background workers stop when they have all stopped.
        let (bg, fg): (Vec<_>, Vec<_>) = handles.into_iter().partition(|(b, _)| *b);
        for (pass, list) in [fg, bg].into_iter().enumerate() {
            if pass == 1 {
                background_control.stop.store(true, Ordering::Relaxed);
            }
            for (background, h) in list {
                match h.join() {
                    Ok(Ok(o)) if background => background_outcomes.push(o),
                    Ok(Ok(o)) => outcomes.push(o),
                    Ok(Err(e)) => open_errors.push(e),
                    Err(_) => open_errors.push((
                        "worker".into(),
                        TargetError::Invalid("a worker thread panicked".into()),
                    )),
                }
            }
        }
        let collected = collector
            .join()
            .map_err(|_| RunError::Thread(std::io::Error::other("the collector panicked")))?;
        Ok(collected)
    })?;
    let cpu_used_ns = process_cpu_ns().saturating_sub(cpu_at_start);
    console.clear_progress();

    if let Some((name, e)) = open_errors.into_iter().next() {
        let summary = failed_summary(&run_id, plan, run, started, &e.to_string());
        store.finish_run(&run_id, &summary)?;
        let _ = folder.write_json("summary.json", &summary);
        return Err(RunError::Target {
            target: name,
            source: e,
        });
    }
    if let Some(e) = collected.io_error {
        return Err(RunError::Results {
            path: folder.path.clone(),
            source: e,
        });
    }

    let mut summary = summarize(
        &run_id,
        plan,
        run,
        started,
        &outcomes,
        &collected,
        cpu_used_ns,
        start_ns,
        &background_names,
    );
    summary.software = software;
    // Events before the run (page cache dropped) are stamped at the start of the warm-up.
    for (kind, detail) in events_before {
        summary.events.insert(
            0,
            Event {
                time_seconds: -summary.warmup_seconds,
                kind,
                detail,
            },
        );
    }
    drop(background_outcomes);
    folder
        .write_json("summary.json", &summary)
        .map_err(|source| RunError::Results {
            path: folder.path.clone(),
            source,
        })?;
    store.finish_run(&run_id, &summary)?;
    Ok(summary)
}

fn failed_summary(
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
        started_at: crate::results::rfc3339(started),
        ended_at: crate::results::rfc3339(SystemTime::now()),
        warmup_seconds: run.warmup.0.as_secs_f64(),
        measured_seconds: 0.0,
        targets: Vec::new(),
        total: TargetResult::default(),
        background: Vec::new(),
        software: BTreeMap::new(),
        client: ClientUsage::default(),
        warnings: vec![format!("the run could not start: {why}")],
        events: Vec::new(),
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
        collector::merge(&mut all, &k.service);
        if let Some(h) = &k.intended {
            collector::merge(all_intended.get_or_insert_with(new_histogram), h);
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

#[allow(clippy::too_many_arguments)]
fn summarize(
    run_id: &str,
    plan: &Plan,
    run: &RunPlan,
    started: SystemTime,
    outcomes: &[WorkerOutcome],
    c: &collector::Collected,
    cpu_used_ns: u64,
    start_ns: u64,
    background_names: &[String],
) -> RunSummary {
    let measure_start = outcomes
        .iter()
        .map(|o| o.measure_start_ns)
        .min()
        .unwrap_or(start_ns);
    let measure_end = outcomes
        .iter()
        .map(|o| o.last_completion_ns)
        .max()
        .unwrap_or(measure_start);
    let measured_ns = measure_end.saturating_sub(measure_start);
    let secs = (measured_ns as f64 / 1e9).max(1e-9);
    let end_reason = if outcomes.iter().any(|o| o.end_reason == EndReason::Error) {
        EndReason::Error
    } else if outcomes
        .iter()
        .any(|o| o.end_reason == EndReason::Interrupted)
    {
        EndReason::Interrupted
    } else if outcomes.iter().any(|o| o.end_reason == EndReason::Ops) {
        EndReason::Ops
    } else {
        EndReason::Duration
    };
    let status = match end_reason {
        EndReason::Duration | EndReason::Ops => RunStatus::Complete,
        _ => RunStatus::Partial,
    };

    let mut targets = Vec::new();
    let mut total_kinds: BTreeMap<OpKind, KindTotals> = BTreeMap::new();
    for (ti, t) in run.targets.iter().enumerate() {
        let present: Vec<OpKind> = OpKind::ALL
            .into_iter()
            .filter(|k| c.totals[ti][*k as usize].is_some())
            .collect();
        let kinds: Vec<&KindTotals> = present
            .iter()
            .filter_map(|k| c.totals[ti][*k as usize].as_ref())
            .collect();
        let mut r = target_result(&t.name, &kinds, &present, secs);
        r.target_type = t.config.type_name().to_string();
        r.workload = t.workload_name.clone();
        r.workload_type = t.workload.result_type().to_string();
        r.threads = t.workload.threads();
        r.queue_depth = t.workload.queue_depth();
        r.block_bytes = t.workload.block_bytes();
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
    let mut total = target_result("total", &refs, &names, secs);
    total.threads = run.targets.iter().map(|t| t.workload.threads()).sum();
    let background: Vec<TargetResult> = background_names
        .iter()
        .enumerate()
        .map(|(bi, name)| {
            let ti = run.targets.len() + bi;
            let present: Vec<OpKind> = OpKind::ALL
                .into_iter()
                .filter(|k| c.totals[ti][*k as usize].is_some())
                .collect();
            let kinds: Vec<&KindTotals> = present
                .iter()
                .filter_map(|k| c.totals[ti][*k as usize].as_ref())
                .collect();
            let mut r = target_result(name, &kinds, &present, secs);
            r.threads = 1;
            r.queue_depth = 1;
            r
        })
        .collect();

    let logical_cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    let busy: Vec<f64> = c
        .worker_cpu_ns
        .iter()
        .map(|&ns| ns as f64 / measured_ns.max(1) as f64)
        .collect();
    let busy_max = busy.iter().copied().fold(0.0, f64::max);
    let busy_mean = if busy.is_empty() {
        0.0
    } else {
        busy.iter().sum::<f64>() / busy.len() as f64
    };
    let run_secs = (measured_ns + run.warmup.0.as_nanos() as u64) as f64 / 1e9;
    let cores_used = cpu_used_ns as f64 / 1e9 / run_secs.max(1e-9);
    let cpu_bound = busy_max >= SATURATED_BUSY || cores_used >= 0.9 * logical_cpus as f64;
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
    for (t, r) in run.targets.iter().zip(&targets) {
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
    let misses: u64 = outcomes.iter().map(|o| o.spare_misses).sum();
    if misses > 0 {
        warnings.push(format!(
            "the collector fell behind: {misses} intervals were allocated on the worker threads"
        ));
    }
    if total.ops == 0 && status == RunStatus::Complete {
        warnings.push("no operation completed successfully during measurement".into());
    }

    let warmup_s = run.warmup.0.as_secs_f64();
    let mut events = vec![Event {
        time_seconds: -warmup_s,
        kind: "warmup-start".into(),
        detail: String::new(),
    }];
    events.push(Event {
        time_seconds: 0.0,
        kind: "measure-start".into(),
        detail: String::new(),
    });
    events.push(Event {
        time_seconds: secs,
        kind: "measure-end".into(),
        detail: format!("{end_reason:?}").to_lowercase(),
    });
    let error_samples = c
        .error_samples
        .iter()
        .map(|(t, k, e)| ErrorSample {
            target: run
                .targets
                .get(*t as usize)
                .map(|t| t.name.clone())
                .or_else(|| {
                    background_names
                        .get(*t as usize - run.targets.len())
                        .cloned()
                })
                .unwrap_or_default(),
            op: k.name().into(),
            kind: e.kind.name().into(),
            message: e.message(),
        })
        .collect();

    RunSummary {
        run_id: run_id.to_string(),
        study: plan.study.clone(),
        step: run.step.clone(),
        run_index: run.index,
        run_count: plan.runs.len(),
        repetition: run.repetition,
        parameters: run.parameters.clone(),
        status,
        end_reason,
        started_at: crate::results::rfc3339(started),
        ended_at: crate::results::rfc3339(SystemTime::now()),
        warmup_seconds: warmup_s,
        measured_seconds: secs,
        targets,
        total,
        background,
        software: BTreeMap::new(),
        client: ClientUsage {
            cpu_seconds: cpu_used_ns as f64 / 1e9,
            cpu_cores_used: cores_used,
            logical_cpus,
            worker_busy_max: busy_max,
            worker_busy_mean: busy_mean,
            saturated,
        },
        warnings,
        events,
        error_samples,
    }
}

/// Interval length used when a study does not say.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// Writes back dirty pages and drops the page cache (as the RocksDB brief did before each
/// workload), or says why it could not. Returns the event to record.
pub fn drop_page_cache() -> (String, String) {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        Ok(()) => ("page-cache-dropped".into(), String::new()),
        Err(e) => (
            "page-cache-not-dropped".into(),
            format!("writing /proc/sys/vm/drop_caches: {e} (needs root)"),
        ),
    }
}
