//! Setting a run up: preparing its targets, capturing the system under them, and building
//! each worker's configuration, session parameters, recorder and operation source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::collector::TargetShape;
use super::worker::{StartGate, WorkerConfig};
use super::{RunError, RunOptions, SPARES_PER_WORKER};
use storlab_model::OpKind;
use storlab_model::Region;
use storlab_record::{Interval, Recorder};
use storlab_results::{RunFolder, system};
use storlab_study::plan::RunPlan;
use storlab_targets::{
    PrepareOptions, Prepared, SessionParams, SessionTables, TargetError, WorkloadParams,
};
use storlab_verify::{VerifyParams, VerifyTable};
use storlab_workload::Source;

/// The run's targets, prepared.
pub struct Ready {
    /// Per target: the region its operations address.
    pub regions: Vec<Region>,
    /// Per target: what its sessions share.
    pub handles: Vec<Prepared>,
    /// `target.software` = version, as the targets report them.
    pub software: BTreeMap<String, String>,
    /// Per target: seconds its `prepare` took (a dataset's writing, a database's load).
    pub prepare_seconds: Vec<f64>,
    /// What the targets' `prepare` did to the systems under test (a server's memory limit):
    /// (kind, `target: detail`), recorded as events at the run's start.
    pub setup_events: Vec<(String, String)>,
}

/// Prepares every target of the run (safety checks, layout, open databases), before any
/// worker starts.
pub fn prepare_targets(
    run: &RunPlan,
    opts: &RunOptions,
    prepared: &mut BTreeMap<String, Region>,
) -> Result<Ready, RunError> {
    let mut regions = Vec::new();
    let mut handles_prepared = Vec::new();
    let mut software = BTreeMap::new();
    let mut setup_events = Vec::new();
    let mut prepare_seconds = Vec::new();
    for t in &run.targets {
        let popts = PrepareOptions {
            allow_destroy: opts.allow_destroy.clone(),
            writes: t.workload.writes(),
            min_size_bytes: t.workload.block_bytes(),
            fresh: t.workload.fresh(),
            verbose: true,
            ycsb: t.workload.ycsb(),
            pgbench_scale: t.workload.as_pgbench().map(|p| p.scale),
            training: t.workload.as_training().map(|w| {
                let dataset = std::sync::Arc::new(w.build_dataset());
                storlab_targets::TrainingPrep {
                    read_bytes: w.read_bytes(dataset.largest_sample()),
                    dataset,
                    folder: w.model.clone(),
                }
            }),
            checkpoint: t.workload.as_checkpoint().map(|w| {
                storlab_targets::dataset::checkpoint::CheckpointPrep {
                    layout: std::sync::Arc::new(w.layout()),
                    model: w.model.clone(),
                    writes: w.checkpoints_write,
                    reads: w.checkpoints_read,
                    io_bytes: w.io_bytes,
                    seed: w.seed,
                }
            }),
        };
        // A client's target is prepared from its client's network namespace: connections
        // (and threads) a target opens here live there.
        let entered =
            storlab_targets::netns::enter(t.netns.as_deref()).map_err(|e| RunError::Target {
                target: t.name.clone(),
                source: TargetError::Netns(e),
            })?;
        let began = std::time::Instant::now();
        let p = t
            .config
            .prepare(&popts)
            .map_err(|source| RunError::Target {
                target: t.name.clone(),
                source,
            })?;
        if let Some(entered) = entered {
            entered.leave().map_err(|e| RunError::Target {
                target: t.name.clone(),
                source: TargetError::Netns(e),
            })?;
        }
        let zones_bytes = t
            .workload
            .as_block()
            .map_or(0, |w| w.distribution.bytes_needed());
        if zones_bytes > p.region.size_bytes {
            // fio fails such a job too: "zoned_abs sizes exceed file size".
            return Err(RunError::Target {
                target: t.name.clone(),
                source: TargetError::Invalid(format!(
                    "the workload's zoned-abs zones add up to {zones_bytes} bytes, more than the region's {} bytes",
                    p.region.size_bytes
                )),
            });
        }
        prepare_seconds.push(began.elapsed().as_secs_f64());
        prepared.insert(t.name.clone(), p.region);
        regions.push(p.region);
        for (name, version) in t.config.software(&p) {
            software.insert(format!("{}.{name}", t.name), version);
        }
        for (kind, detail) in t.config.setup_events(&p) {
            setup_events.push((kind, format!("{}: {detail}", t.name)));
        }
        handles_prepared.push(p);
    }

    Ok(Ready {
        regions,
        handles: handles_prepared,
        software,
        prepare_seconds,
        setup_events,
    })
}

/// Captures the system under the run's targets and the targets' software into
/// `system.json`.
pub fn write_system(
    run: &RunPlan,
    handles_prepared: &[Prepared],
    folder: &RunFolder,
    command_line: &str,
) -> Result<system::SystemInfo, RunError> {
    let sys = capture_system(run, handles_prepared, command_line);
    folder.write_json("system.json", &sys)?;
    Ok(sys)
}

/// The system capture of a run: this machine, the storage under its targets, their software.
pub fn capture_system(
    run: &RunPlan,
    handles_prepared: &[Prepared],
    command_line: &str,
) -> system::SystemInfo {
    let paths: Vec<PathBuf> = run.targets.iter().flat_map(|t| t.config.paths()).collect();
    let mut sys = system::capture(&paths);
    sys.command_line = Some(storlab_results::redact(command_line));
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
    sys
}

/// Per target of the run: the table of acknowledged generations when its workload has
/// `verify = true`, made before any worker starts: in a mapped file (see
/// [`super::verify::map_path`]) when the run has a `study_folder` (not on the other ranks of a
/// distributed run, which leave the state to rank 0) and the target can be read back, else on
/// the heap.
pub fn verify_tables(
    run: &RunPlan,
    regions: &[Region],
    study_folder: Option<&std::path::Path>,
) -> Result<Vec<Option<Arc<VerifyTable>>>, RunError> {
    run.targets
        .iter()
        .zip(regions)
        .map(|(t, region)| match t.workload.as_block() {
            Some(b) if b.verify => {
                let (block_bytes, threads) = (b.block_size.0 as u32, b.threads);
                let at = study_folder.map(|d| super::verify::map_path(run, t, d));
                match (t.config.verify_file(), at) {
                    (Some(file), Some(at)) => super::verify::state::create_mapped(
                        &t.name,
                        *region,
                        block_bytes,
                        threads,
                        (&file.path, file.direct),
                        &at,
                    ),
                    _ => VerifyTable::new(&t.name, *region, block_bytes, threads),
                }
                .map(|table| Some(Arc::new(table)))
                .map_err(|source| RunError::Verify {
                    target: t.name.clone(),
                    source,
                })
            }
            _ => Ok(None),
        })
        .collect()
}

/// Per target of the run: the table of acknowledged writes of a verified `ycsb` workload.
pub fn kv_tables(run: &RunPlan) -> Result<Vec<Option<Arc<storlab_verify::kv::KvTable>>>, RunError> {
    super::verify::kv_tables(run).map_err(|(target, source)| RunError::Verify { target, source })
}

/// Per target of the run: the lost-transaction ledger of a verified `pgbench` workload.
pub fn ledgers(run: &RunPlan) -> Vec<Option<Arc<storlab_verify::ledger::Ledger>>> {
    run.targets
        .iter()
        .map(|t| {
            t.workload.as_pgbench().filter(|p| p.verify).map(|p| {
                Arc::new(storlab_verify::ledger::Ledger::new(
                    &t.name, p.threads, t.seed,
                ))
            })
        })
        .collect()
}

/// One worker, ready to start.
pub struct WorkerInput {
    /// Index of its target in the run.
    pub target: usize,
    pub config: WorkerConfig,
    pub params: SessionParams,
    pub recorder: Recorder,
    pub source: Source,
    /// A background worker (readwhilewriting's writer).
    pub background: bool,
    /// Where its rate changes (a step's rate schedule), from the start of measurement.
    pub rate_changes: Box<[storlab_model::rate::RateChange]>,
    /// The CPUs its thread is pinned to as it starts (its workload's `cpus`); None: not
    /// pinned.
    pub cpus: Option<storlab_model::cpus::CpuList>,
    /// Its place in its workload's flow (fio's flow control).
    pub flow: Option<crate::worker::flow::FlowGate>,
}

/// A run's workers and what connects them to the collector.
pub struct Workers {
    pub inputs: Vec<WorkerInput>,
    pub gate: StartGate,
    pub rx: Receiver<Box<Interval>>,
    pub spare_senders: Vec<SyncSender<Box<Interval>>>,
    /// Per worker: the shape (target or background worker) its figures go to.
    pub worker_target: Vec<u32>,
    pub shapes: Vec<TargetShape>,
    pub background_names: Vec<String>,
    /// Another sender to the collector (a distributed run's rank 0 feeds the other ranks'
    /// intervals through it); drop it otherwise, so that the channel closes with the workers.
    pub to_collector: SyncSender<Box<Interval>>,
    /// Training workloads' accelerators, per target that runs one.
    pub accelerators: Vec<Accelerators>,
    /// Checkpoint workloads' clocks, per target (its index) that runs one.
    pub checkpoints: Vec<(
        usize,
        Arc<storlab_workload::training::checkpoint::CheckpointClock>,
    )>,
}

/// The emulated accelerators of one target's training workload.
pub struct Accelerators {
    pub target: usize,
    pub gates: Vec<Arc<storlab_workload::training::loader::Gate>>,
    pub compute_ns: u64,
    /// The global index of the target's first worker, and readers per accelerator: the
    /// readers of accelerator `a` are workers `first_worker + a * readers ..`.
    pub first_worker: u32,
    pub readers: u32,
}

/// Builds every worker of the run. One channel to the collector, one spare channel back to
/// each worker. Targets' threads come first, then background workers (readwhilewriting's
/// writer), whose figures go to shapes after the targets' and who stop when the targets'
/// threads have stopped.
pub fn plan_workers(
    run: &RunPlan,
    regions: &[Region],
    verify_tables: &[Option<Arc<VerifyTable>>],
    kv_tables: &[Option<Arc<storlab_verify::kv::KvTable>>],
    ledgers: &[Option<Arc<storlab_verify::ledger::Ledger>>],
    interval_ns: u64,
) -> Workers {
    let backgrounds: Vec<(usize, storlab_workload::Background)> = run
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
    let (tx, rx) = sync_channel::<Box<Interval>>(total_workers * (SPARES_PER_WORKER + 2));
    let mut b = Builder {
        run,
        regions,
        verify_tables,
        kv_tables,
        ledgers,
        interval_ns,
        tx,
        spare_senders: Vec::new(),
        worker_target: Vec::new(),
        shapes: Vec::new(),
        inputs: Vec::new(),
        worker_index: 0,
        split_next: BTreeMap::new(),
        flows: flows(run),
        dedupe: DedupePlaces::of(run),
        accelerators: Vec::new(),
        checkpoints: Vec::new(),
    };
    for ti in 0..run.targets.len() {
        b.add_target(ti);
    }
    let background_names = backgrounds
        .into_iter()
        .enumerate()
        .map(|(bi, (ti, bg))| b.add_background(bi, ti, bg))
        .collect();
    Workers {
        to_collector: b.tx,
        inputs: b.inputs,
        gate,
        rx,
        spare_senders: b.spare_senders,
        worker_target: b.worker_target,
        shapes: b.shapes,
        background_names,
        accelerators: b.accelerators,
        checkpoints: b.checkpoints,
    }
}

/// Builds a run's workers one by one, in their global order.
struct Builder<'a> {
    run: &'a RunPlan,
    regions: &'a [Region],
    verify_tables: &'a [Option<Arc<VerifyTable>>],
    kv_tables: &'a [Option<Arc<storlab_verify::kv::KvTable>>],
    ledgers: &'a [Option<Arc<storlab_verify::ledger::Ledger>>],
    interval_ns: u64,
    tx: SyncSender<Box<Interval>>,
    spare_senders: Vec<SyncSender<Box<Interval>>>,
    worker_target: Vec<u32>,
    shapes: Vec<TargetShape>,
    inputs: Vec<WorkerInput>,
    worker_index: u32,
    /// Per workload name: its threads given CPUs so far (`cpus-policy = "split"` deals
    /// them round robin over every thread of the workload in the run, target after target).
    split_next: BTreeMap<String, usize>,
    /// fio's flow control: what the workers of each flow id share.
    flows: BTreeMap<u32, Arc<crate::worker::flow::FlowShared>>,
    /// Each target's first place among the run's global dedupe participants.
    dedupe: DedupePlaces,
    accelerators: Vec<Accelerators>,
    checkpoints: Vec<(
        usize,
        Arc<storlab_workload::training::checkpoint::CheckpointClock>,
    )>,
}

/// The places of the run's workers that share one dedupe working set (fio's
/// `dedupe_global`): each participating target's threads in turn, target after target.
struct DedupePlaces {
    first: Vec<Option<u32>>,
    count: u32,
    /// The first participant's seed, shared by all.
    seed: u64,
}

impl DedupePlaces {
    fn of(run: &RunPlan) -> DedupePlaces {
        let mut d = DedupePlaces {
            first: Vec::new(),
            count: 0,
            seed: 0,
        };
        for t in &run.targets {
            let global = t
                .workload
                .as_block()
                .and_then(|b| b.write_buffers.as_ref())
                .and_then(|w| w.dedupe_working_set)
                .is_some_and(|ws| ws.global);
            if global && d.count == 0 {
                d.seed = t.seed;
            }
            d.first.push(global.then_some(d.count));
            if global {
                d.count += t.workload.threads();
            }
        }
        d
    }

    /// Thread `thread` of target `ti`'s place, if it participates.
    fn place(&self, ti: usize, thread: u32) -> Option<storlab_workload::working_set::Participant> {
        let first = self.first.get(ti).copied().flatten()?;
        Some(storlab_workload::working_set::Participant {
            index: first + thread,
            count: self.count,
            seed: self.seed,
        })
    }
}

/// The flows of the run's block workloads: each id's weights summed over every thread.
fn flows(run: &RunPlan) -> BTreeMap<u32, Arc<crate::worker::flow::FlowShared>> {
    let mut weights: BTreeMap<u32, u64> = BTreeMap::new();
    for t in &run.targets {
        if let Some(f) = t.workload.as_block().and_then(|b| b.flow) {
            *weights.entry(f.id).or_default() +=
                u64::from(f.weight) * u64::from(t.workload.threads());
        }
    }
    weights
        .into_iter()
        .map(|(id, total)| (id, crate::worker::flow::FlowShared::new(total)))
        .collect()
}

impl Builder<'_> {
    /// The next worker's recorder, its spare intervals and its place in the collector's
    /// shapes.
    fn recorder(&mut self, shape: usize, kinds: &[OpKind], open: bool) -> Recorder {
        let worker_index = self.worker_index;
        let (stx, srx) = sync_channel(SPARES_PER_WORKER + 2);
        for _ in 0..SPARES_PER_WORKER {
            let _ = stx.try_send(Interval::new(worker_index, shape as u32, kinds, open));
        }
        self.spare_senders.push(stx);
        self.worker_target.push(shape as u32);
        Recorder::new(
            Interval::new(worker_index, shape as u32, kinds, open),
            self.tx.clone(),
            srx,
        )
    }

    /// A session's parameters: target `ti`'s, for `worker` (`thread`: its thread of the
    /// target, None for a background worker).
    fn params(&self, ti: usize, worker: u32, thread: Option<u32>) -> SessionParams {
        let run = self.run;
        let w = &run.targets[ti].workload;
        let tables = SessionTables {
            blocks: self
                .verify_tables
                .get(ti)
                .and_then(|t| t.clone())
                .zip(thread)
                .map(|(table, thread)| VerifyParams { table, thread }),
            kv: self.kv_tables.get(ti).and_then(|t| t.clone()),
            ledger: self.ledgers.get(ti).and_then(|l| l.clone()),
        };
        let mut workload = WorkloadParams::of(w, thread.unwrap_or(0), tables);
        if let WorkloadParams::Block(b) = &mut workload {
            b.dedupe_place = self.dedupe.place(ti, thread.unwrap_or(0));
        }
        SessionParams {
            worker,
            writes: w.writes(),
            region: self.regions[ti],
            queue_depth: w.queue_depth(),
            seed: run.targets[ti].seed,
            workload,
        }
    }

    /// A thread of target `ti`'s place in its workload's flow, if it has one.
    fn flow_gate(&self, ti: usize) -> Option<crate::worker::flow::FlowGate> {
        let f = self.run.targets[ti].workload.as_block()?.flow?;
        let sleep_ns = f
            .sleep
            .map_or(0, |d| d.0.as_nanos().min(u64::MAX as u128) as u64);
        Some(crate::worker::flow::FlowGate::new(
            self.flows[&f.id].clone(),
            u64::from(f.weight),
            sleep_ns,
        ))
    }

    /// The CPUs the next thread of target `ti` is pinned to, if its workload has `cpus`.
    fn cpus(&mut self, ti: usize) -> Option<storlab_model::cpus::CpuList> {
        let run = self.run;
        let t = &run.targets[ti];
        let b = t.workload.as_block()?;
        let set = b.cpus.as_ref()?;
        let n = self.split_next.entry(t.workload_name.clone()).or_default();
        let cpus = b.cpus_policy.cpus_of(set, *n);
        *n += 1;
        Some(cpus)
    }

    /// Target `ti`'s shape and one worker per thread of its workload.
    fn add_target(&mut self, ti: usize) {
        let run = self.run;
        let t = &run.targets[ti];
        let w = &t.workload;
        let kinds = w.kinds();
        let open = w.rate_per_thread().is_some()
            || run
                .schedule
                .as_ref()
                .is_some_and(|s| s.total_rate_ops.is_some());
        self.shapes.push(TargetShape {
            name: t.name.clone(),
            kinds: kinds.clone(),
            open_loop: open,
            background: false,
        });
        let threads = w.threads();
        let ops = run.ops.or(w.default_ops());
        let duration = run.duration.map(|d| d.0.as_nanos() as u64).or(match w {
            storlab_workload::Workload::Ycsb(y) => y
                .max_execution_seconds
                .map(|s| s.saturating_mul(1_000_000_000)),
            _ => None,
        });
        let run_sources = w.sources(self.regions[ti], t.seed);
        if let Some(clock) = run_sources.checkpoints.clone() {
            self.checkpoints.push((ti, clock));
        }
        if let Some(tw) = w.as_training() {
            self.accelerators.push(Accelerators {
                target: ti,
                gates: run_sources.accelerators,
                compute_ns: tw.compute_time.0.as_nanos() as u64,
                first_worker: self.worker_index,
                readers: tw.read_threads,
            });
        }
        let mut sources = run_sources.sources.into_iter();
        let step_ns = run.duration.map_or(0, |d| d.0.as_nanos() as u64);
        // A rate schedule: this target's share of its group's rate, per phase, per thread.
        let scheduled = run
            .schedule
            .as_ref()
            .and_then(|s| s.worker_rates(&t.name, threads, step_ns));
        for thread in 0..threads {
            // A closed-loop schedule: when this thread runs and when it is paused.
            let activity = run
                .schedule
                .as_ref()
                .and_then(|s| s.worker_activity(&t.name, thread, step_ns));
            let worker_index = self.worker_index;
            let recorder = self.recorder(ti, &kinds, open);
            let max_ops =
                ops.map(|n| n / threads as u64 + u64::from((thread as u64) < n % threads as u64));
            let config = WorkerConfig {
                worker: worker_index,
                queue_depth: w.queue_depth(),
                overlap: t.config.capabilities().overlap,
                interval_ns: self.interval_ns,
                warmup_ns: run.warmup.0.as_nanos() as u64,
                duration_ns: duration,
                start_delay_ns: w.start_delay().as_nanos().min(u64::MAX as u128) as u64,
                max_ops,
                rate_ops: scheduled
                    .as_ref()
                    .map(|(first, _)| *first)
                    .or(w.rate_per_thread()),
                skip_late_ns: run
                    .schedule
                    .as_ref()
                    .and_then(|s| s.latency_limit)
                    .map(|d| d.0.as_nanos() as u64),
                starts_paused: activity.as_ref().is_some_and(|(runs, _)| !runs),
                poisson_seed: w
                    .as_block()
                    .filter(|b| b.rate_process == storlab_model::rate::RateProcess::Poisson)
                    .map(|_| {
                        storlab_model::seed::mix_seed(t.seed, &[0x9015_5011, u64::from(thread)])
                    }),
                stop_on_error: run.stop_on_error,
                latency_target: w.as_block().and_then(|b| b.latency_target),
            };
            let source = sources.next().expect("one source per thread");
            let cpus = self.cpus(ti);
            let flow = self.flow_gate(ti);
            self.inputs.push(WorkerInput {
                target: ti,
                config,
                params: self.params(ti, worker_index, Some(thread)),
                recorder,
                source,
                background: false,
                rate_changes: scheduled
                    .as_ref()
                    .map(|(_, changes)| changes)
                    .or(activity.as_ref().map(|(_, changes)| changes))
                    .map(|changes| changes.clone().into_boxed_slice())
                    .unwrap_or_default(),
                cpus,
                flow,
            });
            self.worker_index += 1;
        }
    }

    /// Background worker `bi` (of target `ti`): its shape, after the targets', and its
    /// worker. Returns its name.
    fn add_background(&mut self, bi: usize, ti: usize, b: storlab_workload::Background) -> String {
        let run = self.run;
        let shape = run.targets.len() + bi;
        let name = format!("{}:writer", run.targets[ti].name);
        let open = b.rate_ops.is_some();
        self.shapes.push(TargetShape {
            name: name.clone(),
            kinds: b.kinds.clone(),
            open_loop: open,
            background: true,
        });
        let worker_index = self.worker_index;
        let recorder = self.recorder(shape, &b.kinds, open);
        let config = WorkerConfig {
            worker: worker_index,
            queue_depth: 1,
            overlap: run.targets[ti].config.capabilities().overlap,
            interval_ns: self.interval_ns,
            warmup_ns: run.warmup.0.as_nanos() as u64,
            duration_ns: None,
            start_delay_ns: 0,
            max_ops: None,
            rate_ops: b.rate_ops,
            skip_late_ns: None,
            starts_paused: false,
            poisson_seed: None,
            stop_on_error: false,
            latency_target: None,
        };
        self.inputs.push(WorkerInput {
            target: ti,
            config,
            params: self.params(ti, worker_index, None),
            recorder,
            source: b.source,
            background: true,
            rate_changes: Box::new([]),
            cpus: None,
            flow: None,
        });
        self.worker_index += 1;
        name
    }
}
