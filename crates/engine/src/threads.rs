//! The steps every process of a run takes, alone or as one rank of a distributed run: arm
//! the prepared targets (verify tables, ledgers), build the workers, start one thread per
//! worker in its client's network namespace, and join them (the targets' workers first, then
//! the background workers, which stop when the targets' have stopped).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{Scope, ScopedJoinHandle};

use super::RunError;
use super::setup::{self, Ready, WorkerInput, Workers};
use super::worker::{Clock, Control, StartGate, Worker, WorkerOutcome};
use storlab_study::plan::RunPlan;
use storlab_targets::{Prepared, TargetError};
use storlab_verify::VerifyTable;

/// What the threads of one run share: the run clock and the flags its workers poll.
pub struct Flags {
    pub clock: Clock,
    /// The targets' workers' flags.
    pub control: Control,
    /// Background workers' flags: they stop once the targets' workers have all stopped.
    pub background: Control,
    /// Set when the targets' workers have all stopped (the step is over).
    pub step_over: AtomicBool,
    /// The targets' workers that have ended.
    pub fg_done: AtomicUsize,
}

impl Flags {
    pub fn new(interrupted: Arc<AtomicBool>) -> Flags {
        Flags {
            clock: Clock::new(),
            control: Control::new(interrupted.clone()),
            background: Control::new(interrupted),
            step_over: AtomicBool::new(false),
            fg_done: AtomicUsize::new(0),
        }
    }
}

/// The run's targets, prepared, with what their verified workloads record into.
pub struct Armed {
    pub ready: Ready,
    pub verify_tables: Vec<Option<Arc<VerifyTable>>>,
    pub kv_tables: Vec<Option<Arc<storlab_verify::kv::KvTable>>>,
    pub ledgers: Vec<Option<Arc<storlab_verify::ledger::Ledger>>>,
    /// Length of a timeline interval, ns.
    pub interval_ns: u64,
}

impl Armed {
    /// Allocates the tables of the run's verified workloads, before any worker starts (the
    /// block tables mapped in files in `study_folder`, or at `verify-state`, see
    /// `setup::verify_tables`).
    pub fn new(
        run: &RunPlan,
        ready: Ready,
        study_folder: Option<&std::path::Path>,
    ) -> Result<Armed, RunError> {
        let verify_tables = setup::verify_tables(run, &ready.regions, study_folder)?;
        let kv_tables = setup::kv_tables(run)?;
        let ledgers = setup::ledgers(run);
        Ok(Armed {
            ready,
            verify_tables,
            kv_tables,
            ledgers,
            interval_ns: run.interval.0.as_nanos() as u64,
        })
    }

    /// Every worker of the run (see `setup::plan_workers`).
    pub fn plan_workers(&self, run: &RunPlan) -> Workers {
        setup::plan_workers(
            run,
            &self.ready.regions,
            &self.verify_tables,
            &self.kv_tables,
            &self.ledgers,
            self.interval_ns,
        )
    }
}

/// Why a worker ended without an outcome.
pub enum WorkerFailure {
    /// Its thread could not enter its client's network namespace.
    Netns {
        worker: u32,
        target: String,
        error: TargetError,
    },
    /// Its thread could not be pinned to its workload's `cpus`.
    Pin {
        worker: u32,
        target: String,
        error: TargetError,
    },
    /// Its session could not open.
    Open {
        worker: u32,
        target: String,
        error: TargetError,
    },
    /// Its thread panicked.
    Panicked,
}

impl WorkerFailure {
    /// The target (or "worker") that failed, and why.
    pub fn into_target_error(self) -> (String, TargetError) {
        match self {
            WorkerFailure::Netns { target, error, .. }
            | WorkerFailure::Pin { target, error, .. }
            | WorkerFailure::Open { target, error, .. } => (target, error),
            WorkerFailure::Panicked => (
                "worker".into(),
                TargetError::Invalid("a worker thread panicked".into()),
            ),
        }
    }

    /// The worker (u32::MAX when unknown) and why, as another rank tells rank 0.
    pub fn into_text(self) -> (u32, String) {
        match self {
            WorkerFailure::Netns { worker, error, .. } => (worker, error.to_string()),
            WorkerFailure::Open {
                worker,
                target,
                error,
            }
            | WorkerFailure::Pin {
                worker,
                target,
                error,
            } => (worker, format!("target `{target}`: {error}")),
            WorkerFailure::Panicked => (u32::MAX, "a worker thread panicked".into()),
        }
    }
}

type WorkerThread<'scope> = ScopedJoinHandle<'scope, Result<WorkerOutcome, WorkerFailure>>;

/// Starts one thread per worker; each opens its session and waits at the gate. Returns
/// whether each is a background worker, and its thread.
pub fn spawn_workers<'scope, 'env>(
    scope: &'scope Scope<'scope, 'env>,
    run: &'env RunPlan,
    inputs: Vec<WorkerInput>,
    handles: &'env [Prepared],
    gate: &'env StartGate,
    flags: &'env Flags,
) -> Result<Vec<(bool, WorkerThread<'scope>)>, RunError> {
    let mut threads = Vec::new();
    for input in inputs {
        let background = input.background;
        let h = std::thread::Builder::new()
            .name(format!("storlab-w{}", input.config.worker))
            .spawn_scoped(scope, move || {
                let ended = run_worker(run, input, handles, gate, flags);
                if !background {
                    flags.fg_done.fetch_add(1, Ordering::Relaxed);
                }
                ended
            })
            .map_err(RunError::Thread)?;
        threads.push((background, h));
    }
    Ok(threads)
}

/// One worker's thread: in its client's network namespace, pinned to its CPUs (once, before
/// its session opens: threads the session starts inherit them), opens its session and runs it.
fn run_worker(
    run: &RunPlan,
    input: WorkerInput,
    handles: &[Prepared],
    gate: &StartGate,
    flags: &Flags,
) -> Result<WorkerOutcome, WorkerFailure> {
    let WorkerInput {
        target: ti,
        config,
        params,
        recorder,
        source,
        background,
        rate_changes,
        cpus,
        flow,
    } = input;
    let t = &run.targets[ti];
    let worker_index = config.worker;
    // The worker's thread lives in its client's network namespace.
    let _netns = match storlab_targets::netns::enter(t.netns.as_deref()) {
        Ok(entered) => entered,
        Err(e) => {
            gate.fail();
            return Err(WorkerFailure::Netns {
                worker: worker_index,
                target: t.name.clone(),
                error: TargetError::Netns(e),
            });
        }
    };
    // The CPUs the kernel reports for the thread once pinned, stored with its outcome.
    let pinned_cpus = match cpus.as_ref().map(storlab_model::cpus::pin_this_thread) {
        None => None,
        Some(Ok(got)) => Some(got),
        Some(Err(m)) => {
            gate.fail();
            return Err(WorkerFailure::Pin {
                worker: worker_index,
                target: t.name.clone(),
                error: TargetError::Invalid(m),
            });
        }
    };
    let worker = Worker {
        config,
        clock: flags.clock.clone(),
        control: if background {
            &flags.background
        } else {
            &flags.control
        },
        gate,
        source,
        recorder,
        rate_changes,
        flow,
    };
    t.config
        .open(&handles[ti], &params, worker)
        .map(|mut outcome| {
            outcome.pinned_cpus = pinned_cpus;
            outcome
        })
        .map_err(|error| {
            gate.fail();
            WorkerFailure::Open {
                worker: worker_index,
                target: t.name.clone(),
                error,
            }
        })
}

/// What the workers' threads ended with.
#[derive(Default)]
pub struct Joined {
    pub outcomes: Vec<WorkerOutcome>,
    pub background: Vec<WorkerOutcome>,
    pub failures: Vec<WorkerFailure>,
}

/// Joins the targets' workers, then stops the background workers and joins them.
pub fn join_workers(threads: Vec<(bool, WorkerThread<'_>)>, flags: &Flags) -> Joined {
    let mut joined = Joined::default();
    let (bg, fg): (Vec<_>, Vec<_>) = threads.into_iter().partition(|(b, _)| *b);
    for (pass, list) in [fg, bg].into_iter().enumerate() {
        if pass == 1 {
            flags.background.stop.store(true, Ordering::Relaxed);
            flags.step_over.store(true, Ordering::Relaxed);
        }
        for (background, h) in list {
            match h.join() {
                Ok(Ok(o)) if background => joined.background.push(o),
                Ok(Ok(o)) => joined.outcomes.push(o),
                Ok(Err(e)) => joined.failures.push(e),
                Err(_) => joined.failures.push(WorkerFailure::Panicked),
            }
        }
    }
    flags.step_over.store(true, Ordering::Relaxed);
    joined
}
