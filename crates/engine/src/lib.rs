//! Running a plan: for each run, prepare its targets, start one thread per worker (each owning
//! its session, operation source and recorder), collect their intervals, and store the results
//! (folder and results store) before the next run starts.
//!
//! Ctrl-C stops issuing, lets what is in flight finish, and stores the run as partial; later
//! runs of the study are skipped. A second Ctrl-C exits at once (see `cli`).

pub mod access;
mod after;
pub mod collector;
pub mod distributed;
pub mod events;
pub mod http;
mod memory;
pub mod metrics;
mod one;
pub mod pacer;
pub mod recording;
pub mod setup;
pub mod steady;
pub mod threads;
pub mod training;
pub mod verify;
pub mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use recording::Recording;
use storlab_model::Region;
use storlab_results::store::StoreLocation;
use storlab_results::summary::RunSummary;
use storlab_study::plan::{Plan, RunPlan};
use storlab_targets::TargetError;
use worker::WorkerOutcome;

/// Spare intervals each worker starts with, so that rotation never waits or allocates.
pub(crate) const SPARES_PER_WORKER: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("target `{target}`: {source}")]
    Target { target: String, source: TargetError },
    #[error("writing results file {}: {source}", path.display())]
    Results {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("results store: {0}")]
    Store(#[from] storlab_results::store::StoreError),
    #[error("starting a worker thread: {0}")]
    Thread(std::io::Error),
    #[error(
        "run {run}: {message} (the failure stopped the study: on-failure = \"stop-step\" goes on with the next step, \"continue\" with this one)"
    )]
    Event { run: usize, message: String },
    #[error("target `{target}`: {source}")]
    Verify {
        target: String,
        source: storlab_verify::VerifyError,
    },
}

impl From<storlab_results::write::WriteError> for RunError {
    fn from(e: storlab_results::write::WriteError) -> RunError {
        RunError::Results {
            path: e.path,
            source: e.source,
        }
    }
}

/// How a plan is run.
pub struct RunOptions {
    pub results_dir: PathBuf,
    /// The results store (the SQLite file in `results_dir` unless `--store` says otherwise).
    pub store: StoreLocation,
    pub allow_destroy: Vec<PathBuf>,
    /// Set by the Ctrl-C handler.
    pub interrupted: Arc<AtomicBool>,
    /// Who hears of the run's progress and of each run stored (the CLI's console).
    pub console: Box<dyn Watch>,
    /// The command line, for the disclosure.
    pub command_line: String,
    /// The live metrics endpoint (`--metrics`), fed by each run's collector.
    pub metrics: Option<Arc<metrics::Exporter>>,
    /// Processes left behind by a storlab that died, found and stopped before this study
    /// (see `events::started`): warnings of its first run.
    pub leftovers: Vec<String>,
}

/// What running a plan produced.
pub struct StudyOutcome {
    pub folder: PathBuf,
    pub summaries: Vec<RunSummary>,
    pub interrupted: bool,
    /// One sentence per step that a failing event stopped (`on-failure = "stop-step"`),
    /// naming the step and the event: the study went on, and fails at its end.
    pub steps_stopped: Vec<String>,
    /// One sentence per run not run because its step's accelerator search had already ended
    /// (a training sweep over `accelerators` stops at its first point below the AU line).
    pub runs_skipped: Vec<String>,
    /// Why the results store (a shared one) did not get the study's runs, when it did not:
    /// they are in their folders, to be pushed (`storlab results push`).
    pub store_unreachable: Option<String>,
}

/// What a running plan tells whoever watches it (the CLI prints it).
pub trait Watch: Sync {
    /// After each interval the collector completed.
    fn progress(&self, run: &RunPlan, n_runs: usize, p: &collector::Progress, interval_ns: u64);
    /// When a run's threads have ended.
    fn clear_progress(&self);
    /// When a run's results are stored.
    fn run_finished(&self, s: &RunSummary);
}

/// Runs every run of the plan in order and stores each one's results (the study's files
/// made from them, such as `raid.json` and `iometer.csv`, are the CLI's to write).
pub fn run_plan(plan: &Plan, opts: &RunOptions) -> Result<StudyOutcome, RunError> {
    #[cfg(feature = "mpi")]
    if let Some(d) = distributed::current().filter(|d| d.rank != 0) {
        return distributed::run_plan_remote(plan, opts, d);
    }
    let study_folder = storlab_results::write::create_study_folder(&opts.results_dir, &plan.study)?;
    storlab_results::write_study_files(&study_folder, plan)?;
    let mut store = Recording::open(&opts.store)?;
    let mut summaries = Vec::new();
    let mut prepared: BTreeMap<String, Region> = BTreeMap::new();
    // Processes the study's events started: those without `keep` are stopped at the end of
    // their run, the others when the study ends (or fails).
    let mut processes = events::Processes::default();
    let mut steps_stopped = Vec::new();
    let mut search = training::Search::default();
    let mut runs_skipped = Vec::new();
    let result: Result<(), RunError> = (|| {
        for run in &plan.runs {
            if opts.interrupted.load(Ordering::Relaxed) {
                break;
            }
            if let Some(why) = search.skips(run) {
                runs_skipped.push(why);
                continue;
            }
            let ran = one::run_one(
                plan,
                run,
                opts,
                &study_folder,
                &mut store,
                &mut prepared,
                &mut processes,
            );
            processes.stop(false);
            // A result file that could not be written: the run is kept as `incomplete` in
            // the store, with what is missing, and the study stops.
            let ran = ran.map_err(|e| mark_incomplete(e, &mut store, &study_folder, run));
            let ended = ran?;
            if let Some(f) = ended.stopped_by {
                let kept = if ended.summary.is_some() {
                    "its results are kept"
                } else {
                    "it was not measured"
                };
                steps_stopped.push(format!(
                    "step `{}` (run {}) was stopped by its failing event `{}` (on-failure = \"stop-step\"; {kept}): {}",
                    run.label(),
                    run.index,
                    f.event,
                    f.message
                ));
            }
            if let Some(summary) = ended.summary {
                search.saw(run, &summary);
                opts.console.run_finished(&summary);
                summaries.push(summary);
            }
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
    Ok(StudyOutcome {
        folder: study_folder,
        summaries,
        interrupted: opts.interrupted.load(Ordering::Relaxed),
        steps_stopped,
        runs_skipped,
        store_unreachable: store.unreachable().map(str::to_string),
    })
}

/// A result file of `run` that could not be written: the run is marked `incomplete` in the
/// store with what is missing. If the store cannot be written either (a full disk), the
/// file's error stays the one shown, with the store's added.
fn mark_incomplete(
    e: RunError,
    store: &mut Recording,
    study_folder: &Path,
    run: &RunPlan,
) -> RunError {
    let RunError::Results { path, source } = e else {
        return e;
    };
    let folder = study_folder.join(format!("run-{:03}", run.index));
    let note = format!("not written: {}: {source}", path.display());
    match store.mark_incomplete(&folder, &note) {
        Ok(()) => RunError::Results { path, source },
        Err(store_error) => RunError::Results {
            path,
            source: std::io::Error::new(
                source.kind(),
                format!("{source} (and the run could not be marked incomplete: {store_error})"),
            ),
        },
    }
}

/// Per target: how its operations overlapped (`execution`: as its type declares, or as its
/// sessions say when they ran otherwise) and what its sessions report they used; where
/// workers differ, every value seen is listed.
/// Per worker (by index): the CPUs its thread was pinned to, as read back.
fn worker_cpus(outcomes: &[WorkerOutcome]) -> Vec<Option<storlab_model::cpus::CpuList>> {
    let n = outcomes
        .iter()
        .map(|o| o.worker as usize + 1)
        .max()
        .unwrap_or(0);
    let mut cpus = vec![None; n];
    for o in outcomes {
        cpus[o.worker as usize] = o.pinned_cpus.clone();
    }
    cpus
}

/// What the pinned workers among `workers` were pinned to, as the report says it:
/// `0-1 (all 2 workers)` when they share it, else `worker 1: 0, worker 2: 1` (numbered
/// from 1 on their target); None when none was pinned.
fn pinned_cpus(outcomes: &[WorkerOutcome], workers: std::ops::Range<usize>) -> Option<String> {
    let mut mine: Vec<&WorkerOutcome> = outcomes
        .iter()
        .filter(|o| workers.contains(&(o.worker as usize)))
        .collect();
    mine.sort_by_key(|o| o.worker);
    let lists: Vec<Option<&storlab_model::cpus::CpuList>> =
        mine.iter().map(|o| o.pinned_cpus.as_ref()).collect();
    let first = lists.first().copied().flatten()?;
    if lists.iter().all(|l| *l == Some(first)) {
        return Some(format!("{first} (all {} workers)", lists.len()));
    }
    let each: Vec<String> = lists
        .iter()
        .enumerate()
        .map(|(n, l)| match l {
            Some(l) => format!("worker {}: {l}", n + 1),
            None => format!("worker {}: not pinned", n + 1),
        })
        .collect();
    Some(each.join(", "))
}

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
            if let Some(p) = pinned_cpus(outcomes, first_worker..first_worker + threads) {
                used.insert("pinned-cpus".into(), vec![p]);
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
