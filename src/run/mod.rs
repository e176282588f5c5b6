//! Running a plan: for each run, prepare its targets, start one thread per worker (each owning
//! its session, operation source and recorder), collect their intervals, and store the results
//! (folder and results store) before the next run starts.
//!
//! Ctrl-C stops issuing, lets what is in flight finish, and stores the run as partial; later
//! runs of the study are skipped. A second Ctrl-C exits at once (see `cli`).

pub mod collector;
pub mod console;
pub mod distributed;
pub mod events;
pub mod metrics;
pub mod pacer;
pub mod setup;
pub mod steady;
pub mod verify;
pub mod worker;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use crate::record::process_cpu_ns;
use crate::results::RunFolder;
use crate::results::store::Store;
use crate::results::summarize::{Measured, WorkerEnd, failed_summary, summarize};
use crate::results::summary::{Event, RunSummary};
use crate::study::plan::{Plan, RunPlan};
use crate::targets::{Region, TargetError};
use collector::{Sinks, collect};
use console::Console;
use worker::{Clock, Control, Worker, WorkerOutcome};

/// Spare intervals each worker starts with, so that rotation never waits or allocates.
pub(crate) const SPARES_PER_WORKER: usize = 2;

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
    #[error("run {run}: {message} (on-failure = \"continue\" lets the step go on)")]
    Event { run: usize, message: String },
    #[error("target `{target}`: {source}")]
    Verify {
        target: String,
        source: crate::verify::VerifyError,
    },
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
    /// The live metrics endpoint (`--metrics`), fed by each run's collector.
    pub metrics: Option<Arc<metrics::Exporter>>,
}

/// What running a plan produced.
pub struct StudyOutcome {
    pub folder: PathBuf,
    pub summaries: Vec<RunSummary>,
    pub interrupted: bool,
}

/// Runs every run of the plan in order and stores each one's results.
pub fn run_plan(plan: &Plan, opts: &RunOptions) -> Result<StudyOutcome, RunError> {
    #[cfg(feature = "mpi")]
    if let Some(d) = distributed::current().filter(|d| d.rank != 0) {
        return distributed::run_plan_remote(plan, opts, d);
    }
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
    // Processes the study's events started: those without `keep` are stopped at the end of
    // their run, the others when the study ends (or fails).
    let mut processes = events::Processes::default();
    let result: Result<(), RunError> = (|| {
        for run in &plan.runs {
            if opts.interrupted.load(Ordering::Relaxed) {
                break;
            }
            let ran = run_one(
                plan,
                run,
                opts,
                &study_folder,
                &mut store,
                &mut prepared,
                &mut processes,
            );
            processes.stop(false);
            let summary = ran?;
            opts.console.run_finished(&summary);
            summaries.push(summary);
        }
        Ok(())
    })();
    processes.stop(true);
    let mut seen = std::collections::HashSet::new();
    for t in plan.runs.iter().flat_map(|r| &r.targets) {
        if seen.insert(&t.name) {
            t.config.finish();
        }
    }
    result?;
    if let Some(geometry) = &plan.raid {
        let steps = crate::results::comparison::compare_all_in_folder(&study_folder, &summaries);
        let mut table = crate::results::raid::table(geometry, &steps);
        table.failures = crate::results::raid::failure::failures(&geometry.array, &summaries);
        let path = study_folder.join("raid.json");
        crate::results::write_json_file(&path, &table)
            .map_err(|source| RunError::Results { path, source })?;
    }
    // IOmeter's result file, from the stored runs (a study of block workloads).
    let block_runs = plan
        .runs
        .iter()
        .any(|r| r.targets.iter().any(|t| t.workload.as_block().is_some()));
    if block_runs && !summaries.is_empty() {
        let path = study_folder.join(crate::report::iometer::FILE);
        let runs = crate::results::stored::read_study_folder(&study_folder)
            .map_err(|e| std::io::Error::other(e.to_string()));
        runs.and_then(|runs| std::fs::write(&path, crate::report::iometer::iometer_csv(&runs)))
            .map_err(|source| RunError::Results { path, source })?;
    }
    let comparison =
        crate::results::comparison::compare_in_folder(&plan.study, &study_folder, &summaries);
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
    processes: &mut events::Processes,
) -> Result<RunSummary, RunError> {
    let mut events_before = Vec::new();
    if run.drop_caches {
        events_before.push(drop_page_cache());
    }
    let clock = Clock::new();
    let interrupted = opts.interrupted.clone();
    let control = Control::new(interrupted.clone());
    let step_over = AtomicBool::new(false);
    let event_context = events::Context {
        clock: &clock,
        control: &control,
        step_over: &step_over,
        log_dir: study_folder.join("processes"),
        run_index: run.index,
    };
    // Events that prepare the step (a server its targets need) run before anything else.
    let (mut recorded, failure) = events::run_before(&run.events, &event_context, processes);
    if let Some(f) = failure {
        return Err(RunError::Event {
            run: run.index,
            message: f.message,
        });
    }
    // Prepare every target (safety checks, layout, open databases) before anything starts.
    let ready = setup::prepare_targets(run, opts, prepared)?;
    let handles_prepared = &ready.handles;
    let verify_tables = setup::verify_tables(run, &ready.regions)?;
    let kv_tables = setup::kv_tables(run)?;
    let ledgers = setup::ledgers(run);
    let software = ready.software.clone();

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
    let system = setup::write_system(run, handles_prepared, &folder, &opts.command_line)?;
    store.begin_run(
        &run_id,
        &plan.study,
        run,
        plan.runs.len(),
        &folder.path,
        started,
    )?;

    let background_control = Control::new(interrupted);
    let interval_ns = run.interval.0.as_nanos() as u64;
    let mut workers = setup::plan_workers(
        run,
        &ready.regions,
        &verify_tables,
        &kv_tables,
        &ledgers,
        interval_ns,
    );
    // Under mpirun: this is rank 0, which keeps its share of the workers and gathers the
    // other ranks' (see `distributed`).
    let system = serde_json::to_value(&system).unwrap_or_default();
    let dist0 = distributed::Rank0Run::begin(run, &mut workers, system)?;
    let setup::Workers {
        inputs: worker_inputs,
        gate,
        rx,
        spare_senders,
        worker_target,
        shapes,
        background_names,
        to_collector,
    } = workers;
    let to_collector = dist0.is_some().then_some(to_collector);
    let worker_group: Vec<u32> = dist0
        .as_ref()
        .map(|d| d.assignment().to_vec())
        .unwrap_or_default();
    let local_fg = worker_inputs.iter().filter(|w| !w.background).count();
    let fg_done = AtomicUsize::new(0);

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
    let warmup_ns = warmup.as_nanos() as u64;
    let mut during: (Vec<events::Recorded>, Option<events::Failure>) = (Vec::new(), None);
    let has_timed_events = run
        .events
        .iter()
        .any(|e| e.trigger != crate::study::events::Trigger::BeforeStep);
    let (collected, received) = std::thread::scope(|scope| -> Result<_, RunError> {
        let collector = std::thread::Builder::new()
            .name("storlab-collector".into())
            .spawn_scoped(scope, || {
                let sinks = Sinks {
                    timeline: BufWriter::new(timeline),
                    hdr_log: BufWriter::new(hdr),
                    measure_start_wall,
                };
                let live = collector::Live {
                    steady: run
                        .steady_state
                        .map(|s| (steady::Detector::new(s, interval_ns), &control.steady_state)),
                    metrics: opts.metrics.as_deref(),
                };
                collect(
                    rx,
                    spare_senders,
                    worker_target,
                    &worker_group,
                    shapes,
                    interval_ns,
                    sinks,
                    |p| console.progress(run, n_runs, &p, interval_ns),
                    live,
                )
            })
            .map_err(RunError::Thread)?;
        let receiver = match (&dist0, to_collector) {
            (Some(d), Some(tx)) => {
                let (control, clock, fg_done) = (&control, &clock, &fg_done);
                let h = std::thread::Builder::new()
                    .name("storlab-mpi-rx".into())
                    .spawn_scoped(scope, move || {
                        d.receive(tx, control, clock, fg_done, local_fg)
                    })
                    .map_err(RunError::Thread)?;
                Some(h)
            }
            _ => None,
        };
        let mut handles = Vec::new();
        for setup::WorkerInput {
            target: ti,
            config,
            params,
            recorder,
            source,
            background,
            rate_changes,
        } in worker_inputs
        {
            let t = &run.targets[ti];
            let gate = &gate;
            let control = if background {
                &background_control
            } else {
                &control
            };
            let prepared = &handles_prepared[ti];
            let clock = clock.clone();
            let fg_done = &fg_done;
            let h = std::thread::Builder::new()
                .name(format!("storlab-w{}", config.worker))
                .spawn_scoped(scope, move || {
                    // The worker's thread lives in its client's network namespace.
                    let _netns = match crate::targets::netns::enter(t.netns.as_deref()) {
                        Ok(entered) => entered,
                        Err(e) => {
                            gate.fail();
                            return Err((t.name.clone(), TargetError::Netns(e)));
                        }
                    };
                    let worker = Worker {
                        config,
                        clock,
                        control,
                        gate,
                        source,
                        recorder,
                        rate_changes,
                    };
                    let ended = match t.config.open(prepared, &params, worker) {
                        Ok(outcome) => Ok(outcome),
                        Err(e) => {
                            gate.fail();
                            Err((t.name.clone(), e))
                        }
                    };
                    if !background {
                        fg_done.fetch_add(1, Ordering::Relaxed);
                    }
                    ended
                })
                .map_err(RunError::Thread)?;
            handles.push((background, h));
        }
        let ok = match &dist0 {
            // Every rank agrees; all start at rank 0's instant.
            Some(d) => gate.release_agreed(|ok| {
                cpu_at_start = process_cpu_ns();
                let agreed = d.agree(ok, &clock);
                start_ns = agreed.unwrap_or(0);
                agreed
            }),
            None => gate.release(|| {
                cpu_at_start = process_cpu_ns();
                start_ns = clock.now_ns() + 100_000;
                start_ns
            }),
        };
        if !ok {
            control.stop.store(true, Ordering::Relaxed);
        }
        let ctx = &event_context;
        let processes = &mut *processes;
        let event_thread = (ok && has_timed_events)
            .then(|| {
                let measure_start = start_ns + warmup_ns;
                std::thread::Builder::new()
                    .name("storlab-events".into())
                    .spawn_scoped(scope, move || {
                        events::run_during(&run.events, ctx, processes, measure_start)
                    })
            })
            .transpose()
            .map_err(RunError::Thread)?;
        // The targets' threads first; background workers stop when they have all stopped.
        let (bg, fg): (Vec<_>, Vec<_>) = handles.into_iter().partition(|(b, _)| *b);
        for (pass, list) in [fg, bg].into_iter().enumerate() {
            if pass == 1 {
                background_control.stop.store(true, Ordering::Relaxed);
                step_over.store(true, Ordering::Relaxed);
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
        step_over.store(true, Ordering::Relaxed);
        if let Some(t) = event_thread {
            during = t.join().map_err(|_| {
                RunError::Thread(std::io::Error::other("the event thread panicked"))
            })?;
        }
        let collected = collector
            .join()
            .map_err(|_| RunError::Thread(std::io::Error::other("the collector panicked")))?;
        let received = receiver
            .map(|h| h.join())
            .transpose()
            .map_err(|_| RunError::Thread(std::io::Error::other("the MPI receiver panicked")))?;
        Ok((collected, received))
    })?;
    let mut cpu_used_ns = process_cpu_ns().saturating_sub(cpu_at_start);
    if let (Some(d), Some(r)) = (&dist0, &received) {
        open_errors.extend(d.merge_outcomes(r, &mut outcomes, &mut cpu_used_ns));
    }
    if let Some((rank, e)) = dist0.as_ref().and_then(|d| d.remote_error()) {
        open_errors.push((format!("rank {rank}"), TargetError::Invalid(e)));
    }
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

    let session_used = session_used(run, &outcomes);
    let mut summary = summarize(
        plan,
        run,
        &Measured {
            run_id: &run_id,
            started,
            workers: outcomes
                .iter()
                .map(|o| WorkerEnd {
                    measure_start_ns: o.measure_start_ns,
                    last_completion_ns: o.last_completion_ns,
                    end_reason: o.end_reason,
                    spare_misses: o.spare_misses,
                    skipped_starts: o.skipped_starts,
                })
                .collect(),
            totals: &collected.totals,
            worker_cpu_ns: &collected.worker_cpu_ns,
            worker_totals: &collected.worker_totals,
            worker_shape: &collected.worker_shape,
            error_samples: &collected.error_samples,
            cpu_used_ns,
            start_ns,
            background_names: &background_names,
            session_used,
        },
    );
    summary.software = software;
    if let (Some(d), Some(r)) = (&dist0, &received) {
        d.finish(r, &collected, run, &mut summary, &folder)
            .map_err(|source| RunError::Results {
                path: folder.path.clone(),
                source,
            })?;
    }
    // Events before the run (page cache dropped) are stamped at the start of the warm-up.
    for (kind, detail) in events_before {
        summary
            .events
            .insert(0, Event::mark(-summary.warmup_seconds, &kind, detail));
    }
    drop(background_outcomes);
    // Read back every key written (not part of any latency figure), while the servers the
    // step's events started still run.
    verify::after_run_kv(run, &kv_tables, &ready.handles, &mut summary);
    verify::after_run_ledgers(run, &ledgers, &ready.handles, &mut summary);
    // The study's events, the processes they started stopped at the step's end, and the
    // recovery around each fault, from the stored timeline.
    let measure_start_ns = start_ns + warmup_ns;
    let (timed, failure) = during;
    recorded.extend(timed);
    let stopped_at = (clock.now_ns() as i64 - measure_start_ns as i64) as f64 / 1e9;
    summary.events.extend(events::to_summary(
        &recorded,
        measure_start_ns,
        summary.measured_seconds,
    ));
    if let Some(d) = &collected.steady {
        let mut r = d.result(run.duration.map(|d| d.0.as_secs_f64()));
        r.cut_short = !r.reached && summary.status != crate::results::summary::RunStatus::Complete;
        if let Some(t) = r.reached_after_seconds {
            summary
                .events
                .push(Event::mark(t, "steady-state", r.sentence()));
        }
        summary.steady_state = Some(r);
    }
    if let Some(s) = &run.schedule {
        let marks = crate::results::schedule::phase_marks(s, summary.measured_seconds);
        summary.events.extend(marks);
    }
    for p in processes.stop(false) {
        summary.events.push(Event::mark(
            stopped_at,
            "process-stopped",
            format!(
                "`{}` (pid {}) at the end of the step: {}",
                p.name, p.pid, p.how
            ),
        ));
    }
    summary
        .events
        .sort_by(|a, b| a.time_seconds.total_cmp(&b.time_seconds));
    if !run.events.is_empty() || run.schedule.is_some() {
        let timeline = std::fs::read_to_string(folder.path.join("timeline.csv"))
            .map(|t| crate::results::timeline::parse_timeline(&t))
            .map_err(|source| RunError::Results {
                path: folder.path.join("timeline.csv"),
                source,
            })?;
        let interval_s = run.interval.0.as_secs_f64();
        if !run.events.is_empty() {
            summary.recovery =
                crate::results::recovery::for_run(&summary, &timeline, interval_s, &run.events);
            summary.phases = crate::results::phases::for_run(&summary, &timeline, interval_s);
        }
        // The schedule's figures end with its step's duration: the sliver after it is the
        // workers noticing the end, not a phase.
        let scheduled_s = run
            .duration
            .map_or(summary.measured_seconds, |d| d.0.as_secs_f64())
            .min(summary.measured_seconds);
        summary.schedule = run
            .schedule
            .as_ref()
            .map(|s| crate::results::schedule::for_run(s, scheduled_s, &timeline, interval_s));
    }
    for r in &recorded {
        if r.status != crate::results::summary::EventStatus::Ok {
            summary.warnings.push(format!(
                "event `{}` ({}) {}: {}",
                r.name,
                r.action,
                r.status.name(),
                r.detail
            ));
        }
    }
    if let Some(f) = &failure {
        for w in &mut summary.warnings {
            if w.starts_with("partial run:") {
                *w = w.replace(
                    "(interrupted)",
                    &format!("(stopped by event `{}`)", f.event),
                );
            }
        }
        summary.end_reason = crate::record::EndReason::Error;
        summary.status = crate::results::summary::RunStatus::Partial;
        summary.warnings.push(format!(
            "the step was stopped by its failing event `{}` (on-failure = \"stop\")",
            f.event
        ));
    }
    // Read back what was written (not part of any latency figure), once the workers stopped.
    verify::after_run(run, &verify_tables, &mut summary);
    folder
        .write_json("summary.json", &summary)
        .map_err(|source| RunError::Results {
            path: folder.path.clone(),
            source,
        })?;
    store.finish_run(&run_id, &summary)?;
    if let Some(f) = failure {
        return Err(RunError::Event {
            run: run.index,
            message: f.message,
        });
    }
    Ok(summary)
}

/// Per target: how its operations overlapped (`execution`: as its type declares, or as its
/// sessions say when they ran otherwise) and what its sessions report they used; where
/// workers differ, every value seen is listed.
fn session_used(run: &RunPlan, outcomes: &[WorkerOutcome]) -> Vec<BTreeMap<String, String>> {
    let mut first_worker = 0usize;
    run.targets
        .iter()
        .map(|t| {
            let threads = t.workload.threads() as usize;
            let mut used: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for o in outcomes
                .iter()
                .filter(|o| (first_worker..first_worker + threads).contains(&(o.worker as usize)))
            {
                for (k, v) in &o.used {
                    let seen = used.entry(k.to_string()).or_default();
                    if !seen.contains(v) {
                        seen.push(v.clone());
                    }
                }
            }
            first_worker += threads;
            // What the target's type declares, unless its sessions said otherwise.
            used.entry("execution".into()).or_insert_with(|| {
                vec![
                    t.config
                        .capabilities()
                        .overlap
                        .describe(&t.workload.kinds(), t.workload.queue_depth()),
                ]
            });
            used.into_iter().map(|(k, v)| (k, v.join(" / "))).collect()
        })
        .collect()
}

pub use crate::model::rate::DEFAULT_INTERVAL;

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
