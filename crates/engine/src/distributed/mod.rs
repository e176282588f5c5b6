//! Distributed runs: one study from many client hosts under MPI (`mpirun -np N storlab run
//! STUDY`, or Slurm's `srun`), one result.
//!
//! Every rank loads the same study and runs the same plan. Each run's workers are split over
//! the ranks (evenly, or as `[clients.NAME] rank` / `host` pin them); every rank opens its
//! sessions, then all agree on one start instant (rank 0's wall clock, each rank's clock
//! offset measured by ping-pong at the start of the run) so that interval N is the same
//! second on every host. The ranks form a gather tree ([`tree`]): a rank's shipper thread
//! (never a worker) merges its workers' intervals, and its children's, by interval index
//! (adding histogram counts) and sends them on to its parent as each completes (counters and
//! V2-serialized HDR histograms); rank 0's receiving thread decodes its children's into the
//! same collector its own workers feed, which writes the one timeline, interval log and
//! summary; every rank's own figures come to rank 0 once, in its end report, for the tables
//! per rank and per host, with every rank's system capture. With the stonewall, the
//! first rank to finish its operations stops every rank; steady state, judged on rank 0 from
//! every rank's merged intervals, stops every rank too. A rank whose messages stop is
//! named in a partial result, with its host and when its parent last heard it; what it sent
//! is kept, and the ranks below it in the tree are named as cut off.
//!
//! MPI itself is behind the `mpi` cargo feature: without it storlab never needs MPI, and a
//! launch under mpirun is refused with an error rather than running N separate copies.

pub mod wire;

#[cfg(feature = "mpi")]
mod comm;
#[cfg(feature = "mpi")]
mod finish;
#[cfg(feature = "mpi")]
mod gather;
#[cfg(feature = "mpi")]
mod rank0;
#[cfg(feature = "mpi")]
mod remote;
pub mod tree;

#[cfg(feature = "mpi")]
pub use comm::{Dist, MpiGuard, current, start};
#[cfg(feature = "mpi")]
pub use rank0::{Rank0Run, Received};
#[cfg(feature = "mpi")]
pub use remote::run_plan_remote;
#[cfg(not(feature = "mpi"))]
pub use stub::{Rank0Run, Received};

use storlab_study::plan::RunPlan;

#[derive(Debug, thiserror::Error)]
pub enum DistError {
    #[error(
        "launched by mpirun/srun as one of {0} processes, but this storlab was built without MPI: build it with `cargo build --release --features mpi` (scripts/setup.sh does), or run it without mpirun"
    )]
    NotBuilt(u32),
    #[error("MPI: {0}")]
    Mpi(String),
    #[error("{0}")]
    Placement(String),
}

/// The size of the MPI job this process was launched in, from the launcher's environment
/// (OpenMPI's mpirun, or a PMI launcher such as Slurm's srun); None when not launched so.
pub fn launched_size() -> Option<u32> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .filter_map(|v| v.trim().parse::<u32>().ok())
        .find(|n| *n > 1)
}

/// Whether this process is a rank other than 0 of an MPI job (it then stores nothing and
/// prints nothing: rank 0 does).
pub fn is_other_rank() -> bool {
    #[cfg(feature = "mpi")]
    {
        current().is_some_and(|d| d.rank != 0)
    }
    #[cfg(not(feature = "mpi"))]
    {
        false
    }
}

/// Under MPI, after an error that ends this rank's study: prints it and ends every rank
/// (MPI_Abort), since the others would wait for this one forever. Otherwise nothing.
pub fn abort_job_on_error(e: &dyn std::fmt::Display) {
    #[cfg(feature = "mpi")]
    if let Some(d) = current() {
        eprintln!("error: rank {} ({}): {e}", d.rank, d.host());
        d.abort(1);
    }
    #[cfg(not(feature = "mpi"))]
    let _ = e;
}

/// Without the `mpi` feature: refuses a launch under mpirun.
#[cfg(not(feature = "mpi"))]
pub fn start() -> Result<Option<()>, DistError> {
    match launched_size() {
        Some(n) => Err(DistError::NotBuilt(n)),
        None => Ok(None),
    }
}

/// Keeps the workers `assignment` gives to `rank` (the others run on other ranks).
pub fn keep_share(workers: &mut crate::setup::Workers, assignment: &[u32], rank: u32) {
    workers
        .inputs
        .retain(|w| assignment.get(w.config.worker as usize) == Some(&rank));
    workers.gate = crate::worker::StartGate::new(workers.inputs.len());
    // The accelerators whose readers this rank keeps (their first reader's place says it).
    for a in &mut workers.accelerators {
        let first = a.first_worker as usize;
        let readers = a.readers as usize;
        a.gates
            .retain(|g| assignment.get(first + g.accelerator as usize * readers) == Some(&rank));
    }
}

/// Which rank runs each of a run's workers (global worker index, targets' workers first, then
/// background workers): a pinned client's on its rank or its host's ranks, others split
/// evenly over all ranks in blocks; background workers on rank 0. `hosts[r]` is rank r's host.
pub fn assign_workers(run: &RunPlan, hosts: &[String]) -> Result<Vec<u32>, DistError> {
    let all: Vec<u32> = (0..hosts.len() as u32).collect();
    let mut out = Vec::new();
    for t in &run.targets {
        let eligible: Vec<u32> = match (&t.pin.rank, &t.pin.host) {
            (Some(r), _) if (*r as usize) < hosts.len() => vec![*r],
            (Some(r), _) => {
                return Err(DistError::Placement(format!(
                    "target `{}`: its client `{}` is pinned to rank {r}, but the job has {} ranks",
                    t.name,
                    t.client,
                    hosts.len()
                )));
            }
            (None, Some(h)) => {
                let on: Vec<u32> = all
                    .iter()
                    .copied()
                    .filter(|r| hosts[*r as usize] == *h)
                    .collect();
                if on.is_empty() {
                    return Err(DistError::Placement(format!(
                        "target `{}`: its client `{}` is pinned to host `{h}`, where no rank runs (hosts: {})",
                        t.name,
                        t.client,
                        hosts.join(", ")
                    )));
                }
                on
            }
            (None, None) => all.clone(),
        };
        if t.workload.as_checkpoint().is_some() {
            // Its ranks meet at a barrier in one process's memory.
            return Err(DistError::Placement(format!(
                "target `{}`: a checkpoint workload runs its ranks in one storlab process; under mpirun spreading them over processes is not built (run it without mpirun: its ranks are threads)",
                t.name
            )));
        }
        let threads = t.workload.threads() as usize;
        // A training workload's readers stay with their accelerator: accelerators are split
        // over the ranks in blocks, each with all its readers.
        let (units, per_unit) = match t.workload.as_training() {
            Some(w) => (w.accelerators as usize, w.read_threads as usize),
            None => (threads, 1),
        };
        for j in 0..threads {
            let unit = j / per_unit.max(1);
            out.push(eligible[unit * eligible.len() / units.max(1)]);
        }
    }
    let backgrounds = run
        .targets
        .iter()
        .filter(|t| t.workload.background(t.seed).is_some())
        .count();
    out.extend(std::iter::repeat_n(0, backgrounds));
    Ok(out)
}

/// Without MPI there is no rank 0: `Rank0Run::begin` gives None and nothing else is reached.
#[cfg(not(feature = "mpi"))]
mod stub {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc::SyncSender;

    use crate::RunError;
    use crate::collector::Collected;
    use crate::setup::Workers;
    use crate::worker::{Clock, Control, WorkerOutcome};
    use storlab_record::Interval;
    use storlab_results::RunFolder;
    use storlab_results::summary::RunSummary;
    use storlab_study::plan::RunPlan;
    use storlab_targets::TargetError;

    pub enum Rank0Run {}
    pub enum Received {}

    impl Rank0Run {
        pub fn begin(
            _: &RunPlan,
            _: &mut Workers,
            _: serde_json::Value,
        ) -> Result<Option<Rank0Run>, RunError> {
            Ok(None)
        }
        pub fn assignment(&self) -> &[u32] {
            match *self {}
        }
        pub fn remote_error(&self) -> Option<(u32, String)> {
            match *self {}
        }
        pub fn add_streams(&self, _: &mut Vec<SyncSender<Box<Interval>>>, _: &mut Vec<u32>) {
            match *self {}
        }
        pub fn merge_collected(&self, _: &Received, _: &mut Collected) {
            match *self {}
        }
        pub fn agree(&self, _: bool, _: &Clock) -> Option<u64> {
            match *self {}
        }
        pub fn receive(
            &self,
            _: SyncSender<Box<Interval>>,
            _: &Control,
            _: &Clock,
            _: &AtomicUsize,
            _: usize,
        ) -> Received {
            match *self {}
        }
        pub fn merge_training(
            &self,
            _: &Received,
            _: &mut Vec<(usize, Vec<storlab_model::training::AcceleratorSteps>)>,
        ) {
            match *self {}
        }
        pub fn merge_outcomes(
            &self,
            _: &Received,
            _: &mut Vec<WorkerOutcome>,
            _: &mut u64,
        ) -> Vec<(String, TargetError)> {
            match *self {}
        }
        pub fn finish(
            &self,
            _: &Received,
            _: &Collected,
            _: &RunPlan,
            _: &mut RunSummary,
            _: &RunFolder,
        ) -> Result<(), storlab_results::write::WriteError> {
            match *self {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(text: &str) -> RunPlan {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        std::fs::write(&p, text).unwrap();
        storlab_study::load(&p, Default::default())
            .unwrap()
            .runs
            .remove(0)
    }

    #[test]
    fn workers_split_evenly_or_as_pinned() {
        let run = run_of(
            r#"
[targets.a]
type = "null"
[targets.b]
type = "null"
client = "c1"
[clients.c1]
host = "h2"
[workloads.w]
threads = 8
[[steps]]
workload = "w"
targets = ["a", "b"]
together = true
duration = "1s"
"#,
        );
        let hosts: Vec<String> = ["h1", "h1", "h2", "h2"].map(String::from).to_vec();
        let a = assign_workers(&run, &hosts).unwrap();
        assert_eq!(&a[..8], &[0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(&a[8..], &[2, 2, 2, 2, 3, 3, 3, 3]);
        let one: Vec<String> = vec!["h1".into()];
        let e = assign_workers(&run, &one).unwrap_err().to_string();
        assert!(e.contains("pinned to host `h2`"), "{e}");
    }

    /// A checkpoint workload's ranks meet at a barrier in one process: under mpirun it is
    /// refused before anything runs, naming the target.
    #[test]
    fn a_checkpoint_workload_is_refused_under_mpirun() {
        let run = run_of(
            r#"
[targets.d]
type = "dataset"
path = "/nonexistent/ckpt"
[workloads.c]
type = "checkpoint"
preset = "llama3-8b"
ranks = 2
[[steps]]
workload = "c"
targets = ["d"]
"#,
        );
        let hosts: Vec<String> = ["h1", "h2"].map(String::from).to_vec();
        let e = assign_workers(&run, &hosts).unwrap_err().to_string();
        assert!(
            e.contains("target `d`") && e.contains("checkpoint workload runs its ranks in one"),
            "{e}"
        );
    }
}
