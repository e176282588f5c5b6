//! One run of the plan on this process (alone, or as rank 0 of a distributed run): the
//! step's events before it, prepare and arm its targets, open its folder, run its threads
//! (collector, MPI receiver, workers, timed events), then summarize, read back what was
//! written, run the step's after-step events, add what happened around the measurement, and
//! store it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::collector::{self, Collected, Feed, Sinks, collect};
use super::distributed::{Rank0Run, Received};
use super::events::{self, Failure, Processes, Recorded};
use super::recording::Recording;
use super::setup::{self, Workers};
use super::threads::{Armed, Flags, join_workers, spawn_workers};
use super::worker::{StartGate, WorkerOutcome};
use super::{RunError, RunOptions, after, drop_page_cache, session_used, steady};
use storlab_model::Region;
use storlab_record::process_cpu_ns;
use storlab_results::RunFolder;
use storlab_results::events::Event;
use storlab_results::summarize::{Measured, WorkerEnd, failed_summary, summarize};
use storlab_results::summary::RunSummary;
use storlab_study::events::OnFailure;
use storlab_study::plan::{Plan, RunPlan};
use storlab_targets::TargetError;

/// Where one run is stored: its id, wall-clock start and folder.
struct Stored {
    run_id: String,
    started: SystemTime,
    folder: RunFolder,
}

/// What one run's threads measured and how they ended.
struct Measurement {
    collected: Collected,
    received: Option<Received>,
    outcomes: Vec<WorkerOutcome>,
    /// Sessions that did not open (here or on another rank).
    open_errors: Vec<(String, TargetError)>,
    cpu_used_ns: u64,
    /// The wall time `cpu_used_ns` was read over: from the workers' start to their end, ns.
    cpu_wall_ns: u64,
    /// When the run (warm-up first) started on the run clock, ns.
    start_ns: u64,
    /// The run clock's step, ns (`Clock::step_ns`).
    clock_step_ns: u64,
    background_names: Vec<String>,
    /// The timed events: what they did, and the one that stopped the step.
    during: (Vec<Recorded>, Option<Failure>),
    /// What the sample events read.
    sampled: events::sample::Sampled,
    /// Per training target (its index): what each accelerator did.
    training: Vec<(usize, Vec<storlab_model::training::AcceleratorSteps>)>,
    /// Per checkpoint target (its index): the clock its ranks met at.
    checkpoints: Vec<(
        usize,
        std::sync::Arc<storlab_workload::training::checkpoint::CheckpointClock>,
    )>,
}

/// How one run ended without an error that stops the study.
pub(super) struct Ended {
    /// None when a `before-step` event stopped the step before it was measured.
    pub summary: Option<RunSummary>,
    /// The failing event that stopped the step (`on-failure = "stop-step"`): the study goes
    /// on with its next step and fails at its end.
    pub stopped_by: Option<Failure>,
}

/// The error that stops the study for a failing event whose failure reaches the study
/// (`stop-study`; under mpirun every failure does: the other ranks cannot skip a step alone).
fn stops_study(run: &RunPlan, failure: Option<Failure>) -> Result<Option<Failure>, RunError> {
    let distributed = {
        #[cfg(feature = "mpi")]
        {
            super::distributed::current().is_some()
        }
        #[cfg(not(feature = "mpi"))]
        {
            false
        }
    };
    match failure {
        Some(f) if f.scope == OnFailure::StopStudy || distributed => Err(RunError::Event {
            run: run.index,
            message: f.message,
        }),
        other => Ok(other),
    }
}

/// Runs one run of the plan and stores its results.
pub(super) fn run_one(
    plan: &Plan,
    run: &RunPlan,
    opts: &RunOptions,
    study_folder: &Path,
    store: &mut Recording,
    prepared: &mut BTreeMap<String, Region>,
    processes: &mut Processes,
) -> Result<Ended, RunError> {
    let mut events_before = Vec::new();
    if run.drop_caches {
        events_before.push(drop_page_cache());
    }
    let flags = Flags::new(opts.interrupted.clone());
    if let Some(m) = &opts.metrics {
        m.begin_run(&metrics_labels(plan, run, study_folder));
    }
    let event_context = events::Context {
        clock: &flags.clock,
        control: &flags.control,
        step_over: &flags.step_over,
        log_dir: study_folder.join("processes"),
        run_index: run.index,
        metrics: opts.metrics.as_deref(),
    };
    // Events that prepare the step (a server its targets need) run before anything else.
    let (mut recorded, failure) = events::run_before(&run.events, &event_context, processes);
    if let Some(f) = stops_study(run, failure)? {
        return Ok(Ended {
            summary: None,
            stopped_by: Some(f),
        });
    }
    // Prepare every target (safety checks, layout, open databases) before anything starts.
    let armed = Armed::new(
        run,
        setup::prepare_targets(run, opts, prepared)?,
        Some(study_folder),
    )?;
    let (stored, system) = begin(plan, run, opts, study_folder, store, &armed)?;
    let moved_warnings =
        super::verify::move_into_run_folder(run, &armed.verify_tables, &stored.folder.path);
    let mut workers = armed.plan_workers(run);
    // Under mpirun: this is rank 0, which keeps its share of the workers and gathers the
    // other ranks' (see `distributed`).
    let dist0 = Rank0Run::begin(run, &mut workers, system)?;
    let threads = Threads {
        run,
        opts,
        n_runs: plan.runs.len(),
        flags: &flags,
        events: &event_context,
        handles: &armed.ready.handles,
        interval_ns: armed.interval_ns,
        dist0: dist0.as_ref(),
    };
    // The verify tables' files are synced once per interval while the workers run.
    let syncer = super::verify::state::Syncer::start(&armed.verify_tables, run.interval.0);
    let mut m = threads.measure(workers, &stored, processes)?;
    drop(syncer);
    check_measured(plan, run, &stored, store, &mut m)?;
    let mut summary = summarize_measured(plan, run, &stored, &m, &armed, dist0.as_ref())?;
    summary.training = crate::training::results(run, &m.training, &armed.ready);
    summary.checkpoint = crate::training::checkpoint_results(run, &m.checkpoints);
    summary.warnings.extend(moved_warnings);
    // Events before the run (page cache dropped, what the targets' preparation set) are
    // stamped at the start of the warm-up.
    events_before.extend(armed.ready.setup_events.iter().cloned());
    for (kind, detail) in events_before.into_iter().rev() {
        summary
            .events
            .insert(0, Event::mark(-summary.warmup_seconds, &kind, detail));
    }
    // Read back every key written (not part of any latency figure), while the servers the
    // step's events started still run.
    super::verify::after_run_kv(run, &armed.kv_tables, &armed.ready.handles, &mut summary);
    super::verify::after_run_ledgers(run, &armed.ledgers, &armed.ready.handles, &mut summary);
    // The study's events, the processes they started stopped at the step's end, and the
    // recovery around each fault, from the stored timeline.
    let measure_start_ns = m.start_ns + run.warmup.0.as_nanos() as u64;
    let (timed, failure) = m.during;
    recorded.extend(timed);
    // What the sample events read: their rows, the spans reported, the series' figures.
    let failure = failure.or(m.sampled.add_to(&mut summary, &mut recorded));
    // Read back what was written (not part of any latency figure), once the workers stopped.
    let crashed = events::crash_before(run, &recorded);
    super::verify::after_run(run, &armed.verify_tables, crashed, &mut summary);
    // The after-step events (fio's exec_postrun), before the processes started are stopped.
    let (after_step, after_failure) = events::run_after(&run.events, &event_context, processes);
    recorded.extend(after_step);
    let stopped_at = (flags.clock.now_ns() as i64 - measure_start_ns as i64) as f64 / 1e9;
    let marks = after::Marks {
        recorded: &recorded,
        measure_start_ns,
        stopped_at,
        steady: m.collected.steady.as_ref(),
    };
    marks.add(run, &mut summary, processes);
    after::add_recovery(run, &mut summary, &stored.folder)?;
    after::event_warnings(&mut summary, &recorded, failure.as_ref());
    if run.index == 1 {
        for l in &opts.leftovers {
            summary
                .warnings
                .push(format!("before this study, storlab stopped a process {l}"));
        }
    }
    stored.folder.write_json("summary.json", &summary)?;
    // What the folder holds survives a power loss before the store calls the run complete.
    storlab_results::write::sync_folder(&stored.folder.path)?;
    store.finish_run(&stored.run_id, &summary)?;
    Ok(Ended {
        stopped_by: stops_study(run, failure.or(after_failure))?,
        summary: Some(summary),
    })
}

/// Opens the run's folder, writes its system capture there and begins it in the results
/// store. Returns where it is stored and the system capture.
/// A run's id: its study folder's name and its index (`NAME-r001`).
fn run_id(study_folder: &Path, run: &RunPlan) -> String {
    format!(
        "{}-r{:03}",
        study_folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("run"),
        run.index
    )
}

/// The labels of a run's live metrics: study, run id, step, host and its sweep parameters.
fn metrics_labels(plan: &Plan, run: &RunPlan, study_folder: &Path) -> Vec<(String, String)> {
    let mut labels = vec![
        ("study".to_string(), plan.study.clone()),
        ("run".to_string(), run_id(study_folder, run)),
        ("step".to_string(), run.step.clone()),
        (
            "host".to_string(),
            storlab_results::system::hostname().unwrap_or_default(),
        ),
    ];
    labels.extend(
        run.parameters
            .iter()
            .map(|(k, v)| (super::metrics::parameter_label(k), v.clone())),
    );
    labels
}

fn begin(
    plan: &Plan,
    run: &RunPlan,
    opts: &RunOptions,
    study_folder: &Path,
    store: &mut Recording,
    armed: &Armed,
) -> Result<(Stored, serde_json::Value), RunError> {
    let started = SystemTime::now();
    let run_id = run_id(study_folder, run);
    // In the store first, so that a folder that cannot be written is marked incomplete.
    let folder_path = study_folder.join(format!("run-{:03}", run.index));
    store.begin_run(
        &run_id,
        &plan.study,
        run,
        plan.runs.len(),
        &folder_path,
        started,
    )?;
    let folder = RunFolder::create(study_folder, run, plan)?;
    let system = setup::write_system(run, &armed.ready.handles, &folder, &opts.command_line)?;
    let system = serde_json::to_value(&system).unwrap_or_default();
    let stored = Stored {
        run_id,
        started,
        folder,
    };
    Ok((stored, system))
}

/// A session that did not open fails the run (stored as failed); so does a results file the
/// collector could not write.
fn check_measured(
    plan: &Plan,
    run: &RunPlan,
    stored: &Stored,
    store: &mut Recording,
    m: &mut Measurement,
) -> Result<(), RunError> {
    if let Some((name, e)) = std::mem::take(&mut m.open_errors).into_iter().next() {
        let summary = failed_summary(&stored.run_id, plan, run, stored.started, &e.to_string());
        store.finish_run(&stored.run_id, &summary)?;
        let _ = stored.folder.write_json("summary.json", &summary);
        return Err(RunError::Target {
            target: name,
            source: e,
        });
    }
    if let Some(mut e) = m.collected.io_error.take() {
        e.path = stored.folder.path.join(&e.path);
        return Err(e.into());
    }
    Ok(())
}

/// The run's summary from what its threads measured; on rank 0, with every rank's tables.
fn summarize_measured(
    plan: &Plan,
    run: &RunPlan,
    stored: &Stored,
    m: &Measurement,
    armed: &Armed,
    dist0: Option<&Rank0Run>,
) -> Result<RunSummary, RunError> {
    let c = &m.collected;
    let mut summary = summarize(
        plan,
        run,
        &Measured {
            run_id: &stored.run_id,
            started: stored.started,
            workers: m
                .outcomes
                .iter()
                .map(|o| WorkerEnd {
                    measure_start_ns: o.measure_start_ns,
                    last_completion_ns: o.last_completion_ns,
                    end_reason: o.end_reason,
                    spare_waits: o.spare_waits,
                    spare_wait_ns: o.spare_wait_ns,
                    skipped_starts: o.skipped_starts,
                })
                .collect(),
            totals: &c.totals,
            worker_cpu_ns: &c.worker_cpu_ns,
            worker_wall_ns: &c.worker_wall_ns,
            worker_totals: &c.worker_totals,
            worker_shape: &c.worker_shape,
            error_samples: &c.error_samples,
            cpu_used_ns: m.cpu_used_ns,
            cpu_wall_ns: m.cpu_wall_ns,
            collector_cpu_ns: c.cpu_ns,
            start_ns: m.start_ns,
            clock_step_ns: m.clock_step_ns,
            background_names: &m.background_names,
            session_used: session_used(run, &m.outcomes),
            worker_cpus: super::worker_cpus(&m.outcomes),
        },
    );
    summary.software = armed.ready.software.clone();
    summary.latency_search = m
        .outcomes
        .iter()
        .filter_map(|o| {
            let mut r = o.latency_search.clone()?;
            let ti = c.worker_shape.get(o.worker as usize).copied()?;
            r.target = run.targets.get(ti as usize)?.name.clone();
            Some(r)
        })
        .collect();
    if let (Some(d), Some(r)) = (dist0, &m.received) {
        d.finish(r, c, run, &mut summary, &stored.folder)?;
    }
    Ok(summary)
}

/// What the threads of one run need.
struct Threads<'a> {
    run: &'a RunPlan,
    opts: &'a RunOptions,
    n_runs: usize,
    flags: &'a Flags,
    events: &'a events::Context<'a>,
    handles: &'a [storlab_targets::Prepared],
    interval_ns: u64,
    dist0: Option<&'a Rank0Run>,
}

impl Threads<'_> {
    /// Runs the collector, the MPI receiver (rank 0), the workers and the timed events until
    /// all have ended.
    fn measure(
        &self,
        workers: Workers,
        stored: &Stored,
        processes: &mut Processes,
    ) -> Result<Measurement, RunError> {
        let Workers {
            inputs,
            gate,
            rx,
            mut spare_senders,
            mut worker_target,
            shapes,
            background_names,
            to_collector,
            accelerators,
            checkpoints,
        } = workers;
        let to_collector = self.dist0.is_some().then_some(to_collector);
        let local_fg = inputs.iter().filter(|w| !w.background).count();
        let sinks = self.sinks(stored)?;
        if let Some(m) = &self.opts.metrics
            && !self.run.warmup.0.is_zero()
        {
            m.mark("warmup-start", "", stored.started);
        }
        if let Some(d) = self.dist0 {
            d.add_streams(&mut spare_senders, &mut worker_target);
        }
        let feed = Feed {
            rx,
            spare_senders,
            worker_target,
            shapes,
            sinks,
        };
        let mut cpu_at_start = (0u64, 0u64);
        let mut start_ns = 0u64;
        let sampling = events::sample::Sampling::open(self.run, &stored.folder.path)?;
        let (joined, (during, sampled), mut collected, received, training) =
            std::thread::scope(|scope| -> Result<_, RunError> {
                let collector = std::thread::Builder::new()
                    .name("storlab-collector".into())
                    .spawn_scoped(scope, || self.collect(feed))
                    .map_err(RunError::Thread)?;
                let receiver = match (self.dist0, to_collector) {
                    (Some(d), Some(tx)) => {
                        let (control, clock, fg_done) =
                            (&self.flags.control, &self.flags.clock, &self.flags.fg_done);
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
                let threads =
                    spawn_workers(scope, self.run, inputs, self.handles, &gate, self.flags)?;
                // After the readers: each has its source, so an accelerator whose readers
                // end (or never open) learns it from its gate.
                let accelerator_threads = crate::training::spawn(scope, &accelerators)?;
                let ok;
                (ok, cpu_at_start, start_ns) = self.release(&gate);
                let event_thread = self.spawn_events(scope, ok, start_ns, processes)?;
                let measure_start = start_ns + self.run.warmup.0.as_nanos() as u64;
                let samplers = sampling.spawn(scope, self.events, ok, measure_start)?;
                let joined = join_workers(threads, self.flags);
                let training = crate::training::join(accelerator_threads)?;
                // The step ends once its timed events have (an `outlive-step` wait), then its
                // sample commands are stopped.
                let during = join_events(event_thread)?;
                let during = (during, samplers.stop()?);
                let collected = collector.join().map_err(|_| {
                    RunError::Thread(std::io::Error::other("the collector panicked"))
                })?;
                let received = receiver.map(|h| h.join()).transpose().map_err(|_| {
                    RunError::Thread(std::io::Error::other("the MPI receiver panicked"))
                })?;
                Ok((joined, during, collected, received, training))
            })?;
        // The process's CPU time and the wall time it was read over, from the same two
        // instants.
        let mut cpu_used_ns = process_cpu_ns().saturating_sub(cpu_at_start.0);
        let cpu_wall_ns = self.flags.clock.now_ns().saturating_sub(cpu_at_start.1);
        let mut outcomes = joined.outcomes;
        let mut open_errors: Vec<(String, TargetError)> = joined
            .failures
            .into_iter()
            .map(|f| f.into_target_error())
            .collect();
        let mut training = training;
        if let (Some(d), Some(r)) = (self.dist0, &received) {
            d.merge_collected(r, &mut collected);
            open_errors.extend(d.merge_outcomes(r, &mut outcomes, &mut cpu_used_ns));
            d.merge_training(r, &mut training);
        }
        if let Some((rank, e)) = self.dist0.and_then(|d| d.remote_error()) {
            open_errors.push((format!("rank {rank}"), TargetError::Invalid(e)));
        }
        self.opts.console.clear_progress();
        Ok(Measurement {
            collected,
            received,
            outcomes,
            open_errors,
            cpu_used_ns,
            cpu_wall_ns,
            start_ns,
            clock_step_ns: self.flags.clock.step_ns(),
            background_names,
            during,
            sampled,
            training,
            checkpoints,
        })
    }

    /// The run's timeline and interval log, created in its folder.
    fn sinks(&self, stored: &Stored) -> Result<Sinks<BufWriter<File>, BufWriter<File>>, RunError> {
        let create = |name: &str| {
            let path = stored.folder.path.join(name);
            File::create(&path).map_err(|source| RunError::Results { path, source })
        };
        let timeline = create("timeline.csv")?;
        let hdr = create("histograms.hlog")?;
        Ok(Sinks {
            timeline: BufWriter::new(timeline),
            hdr_log: BufWriter::new(hdr),
            measure_start_wall: stored.started + self.run.warmup.0,
        })
    }

    /// The collector's thread: merges every worker's intervals (and, on rank 0, the other
    /// ranks'), reports progress, feeds steady-state detection and the metrics.
    fn collect(&self, feed: Feed<BufWriter<File>, BufWriter<File>>) -> Collected {
        let (run, interval_ns) = (self.run, self.interval_ns);
        let worker_group: Vec<u32> = self
            .dist0
            .map(|d| d.assignment().to_vec())
            .unwrap_or_default();
        let live = collector::Live {
            steady: run.steady_state.map(|s| {
                (
                    steady::Detector::new(s, interval_ns),
                    &self.flags.control.steady_state,
                )
            }),
            metrics: self.opts.metrics.as_deref(),
        };
        let console = &self.opts.console;
        collect(
            feed,
            &worker_group,
            interval_ns,
            |p| console.progress(run, self.n_runs, &p, interval_ns),
            live,
        )
    }

    /// Once every session has opened, starts the workers together (every rank agreeing, on
    /// rank 0's instant); stops them if one could not open. Returns whether they started,
    /// the process CPU time at the start and when it was read (run clock, ns), and the start
    /// on the run clock.
    fn release(&self, gate: &StartGate) -> (bool, (u64, u64), u64) {
        let clock = &self.flags.clock;
        let mut cpu_at_start = (0u64, 0u64);
        let mut start_ns = 0u64;
        let ok = match self.dist0 {
            // Every rank agrees; all start at rank 0's instant.
            Some(d) => gate.release_agreed(|ok| {
                cpu_at_start = (process_cpu_ns(), clock.now_ns());
                let agreed = d.agree(ok, clock);
                start_ns = agreed.unwrap_or(0);
                agreed
            }),
            None => gate.release(|| {
                cpu_at_start = (process_cpu_ns(), clock.now_ns());
                start_ns = cpu_at_start.1 + 100_000;
                start_ns
            }),
        };
        if !ok {
            self.flags.control.stop.store(true, Ordering::Relaxed);
        }
        (ok, cpu_at_start, start_ns)
    }

    /// The thread of the step's timed and counted events, when the run started and has any.
    fn spawn_events<'scope>(
        &'scope self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        started: bool,
        start_ns: u64,
        processes: &'scope mut Processes,
    ) -> Result<Option<EventThread<'scope>>, RunError> {
        let has_timed_events = self.run.events.iter().any(|e| e.trigger.in_measurement());
        let (run, ctx) = (self.run, self.events);
        let measure_start = start_ns + run.warmup.0.as_nanos() as u64;
        (started && has_timed_events)
            .then(|| {
                std::thread::Builder::new()
                    .name("storlab-events".into())
                    .spawn_scoped(scope, move || {
                        events::run_during(&run.events, ctx, processes, measure_start)
                    })
            })
            .transpose()
            .map_err(RunError::Thread)
    }
}

type EventThread<'scope> = std::thread::ScopedJoinHandle<'scope, (Vec<Recorded>, Option<Failure>)>;

/// What the timed events did, once their thread (if any) has ended.
fn join_events(thread: Option<EventThread>) -> Result<(Vec<Recorded>, Option<Failure>), RunError> {
    match thread {
        Some(t) => t
            .join()
            .map_err(|_| RunError::Thread(std::io::Error::other("the event thread panicked"))),
        None => Ok((Vec::new(), None)),
    }
}
