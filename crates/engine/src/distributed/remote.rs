//! A rank other than 0 of a distributed run: for each run of the plan, prepares the targets,
//! keeps its share of the workers, measures its clock offset to rank 0 and sends its opening,
//! joins the agreed start, and ships each of its workers' intervals to rank 0 from one
//! shipper thread (times moved onto rank 0's run clock) while watching for rank 0's stop. It
//! writes no results of its own: rank 0 stores the run. The study's events, the read-back
//! after a run and background workers are rank 0's alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use hdrhistogram::serialization::V2Serializer;

use super::comm::{Dist, wall_ns};
use super::rank0::{PINGS, START_IN};
use super::wire::{
    self, Final, Hello, Stop, TAG_DONE, TAG_FINAL, TAG_HELLO, TAG_INTERVAL, TAG_STOP, WorkerEndWire,
};
use super::{assign_workers, keep_share};
use crate::threads::{Armed, Flags, Joined, join_workers, spawn_workers};
use crate::worker::{Control, StartGate};
use crate::{RunError, RunOptions, StudyOutcome, setup};
use storlab_model::Region;
use storlab_record::{Interval, process_cpu_ns};
use storlab_study::plan::{Plan, RunPlan};
use storlab_targets::TargetError;

/// Runs this rank's share of every run of the plan.
pub fn run_plan_remote(
    plan: &Plan,
    opts: &RunOptions,
    dist: &'static Dist,
) -> Result<StudyOutcome, RunError> {
    let mut prepared: BTreeMap<String, Region> = BTreeMap::new();
    let result: Result<(), RunError> = (|| {
        for run in &plan.runs {
            if opts.interrupted.load(Ordering::Relaxed) {
                break;
            }
            run_one_remote(run, opts, dist, &mut prepared)?;
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
    Ok(StudyOutcome {
        folder: PathBuf::new(),
        summaries: Vec::new(),
        interrupted: opts.interrupted.load(Ordering::Relaxed),
        steps_stopped: Vec::new(),
        runs_skipped: Vec::new(),
        store_unreachable: None,
    })
}

/// This rank's start and rank 0's, on their run clocks: what moves a time from one to the
/// other.
#[derive(Clone, Copy)]
struct Shift {
    local_start: u64,
    rank0_start: u64,
}

impl Shift {
    fn to_rank0(self, ns: u64) -> u64 {
        if ns == 0 {
            return 0;
        }
        (ns as i64 - self.local_start as i64 + self.rank0_start as i64).max(0) as u64
    }
}

fn run_one_remote(
    run: &RunPlan,
    opts: &RunOptions,
    dist: &'static Dist,
    prepared: &mut BTreeMap<String, Region>,
) -> Result<(), RunError> {
    let ready = setup::prepare_targets(run, opts, prepared);
    let assignment = assign_workers(run, &dist.hosts).map_err(|e| RunError::Target {
        target: "distributed".into(),
        source: TargetError::Invalid(e.to_string()),
    })?;
    let hello = say_hello(run, opts, dist, &ready);
    let ready = match ready {
        Ok(r) => r,
        Err(e) => {
            let _ = dist.agree_start(false, 0, START_IN);
            return Err(e);
        }
    };
    let armed = Armed::new(run, ready, None)?;
    let mut workers = armed.plan_workers(run);
    keep_share(&mut workers, &assignment, dist.rank);
    let setup::Workers {
        inputs,
        gate,
        rx,
        spare_senders,
        to_collector,
        accelerators,
        ..
    } = workers;
    drop(to_collector);
    let local = inputs.len();
    let flags = Flags::new(opts.interrupted.clone());
    let shift: OnceLock<Shift> = OnceLock::new();
    let mut cpu_at_start = 0u64;
    let (joined, sent, training) = std::thread::scope(|scope| -> Result<_, RunError> {
        let shipper = {
            let rank = Shipper {
                dist,
                run_index: run.index,
                local,
                control: &flags.control,
                shift: &shift,
                fg_done: &flags.fg_done,
            };
            std::thread::Builder::new()
                .name("storlab-mpi-tx".into())
                .spawn_scoped(scope, move || rank.ship(rx, spare_senders))
                .map_err(RunError::Thread)?
        };
        let threads = spawn_workers(scope, run, inputs, &armed.ready.handles, &gate, &flags)?;
        // This rank's accelerators, after their readers (see `one::measure`).
        let accelerator_threads = crate::training::spawn(scope, &accelerators)?;
        cpu_at_start = release(dist, &gate, &flags, &shift, hello.clock_offset_ns);
        let joined = join_workers(threads, &flags);
        let training = crate::training::join(accelerator_threads)?;
        let sent = shipper
            .join()
            .map_err(|_| RunError::Thread(std::io::Error::other("the shipper panicked")))?;
        Ok((joined, sent, training))
    })?;
    let shift = shift.get().copied().unwrap_or(Shift {
        local_start: 0,
        rank0_start: 0,
    });
    let end = Final {
        workers: worker_ends(joined, shift),
        cpu_used_ns: process_cpu_ns().saturating_sub(cpu_at_start),
        bytes_sent: sent.0,
        messages_sent: sent.1,
        training,
    };
    dist.send(0, TAG_FINAL, &serde_json::to_vec(&end).unwrap_or_default());
    Ok(())
}

/// Measures this rank's clock offset to rank 0 and sends rank 0 its opening: host, offset,
/// system capture, or why its targets could not be prepared.
fn say_hello(
    run: &RunPlan,
    opts: &RunOptions,
    dist: &Dist,
    ready: &Result<setup::Ready, RunError>,
) -> Hello {
    let (clock_offset_ns, clock_rtt_ns) = dist.measure_offset(PINGS);
    let system = match ready {
        Ok(r) => serde_json::to_value(setup::capture_system(run, &r.handles, &opts.command_line))
            .unwrap_or_default(),
        Err(_) => serde_json::Value::Null,
    };
    let hello = Hello {
        rank: dist.rank,
        host: dist.host().to_string(),
        pid: std::process::id(),
        clock_offset_ns,
        clock_rtt_ns,
        system,
        error: ready.as_ref().err().map(|e| e.to_string()),
    };
    dist.send(
        0,
        TAG_HELLO,
        &serde_json::to_vec(&hello).unwrap_or_default(),
    );
    hello
}

/// Once every local session has opened, joins every rank's agreement and starts the local
/// workers at rank 0's instant (`clock_offset_ns`: this host's wall clock less rank 0's);
/// stops them if the run was called off. Returns the process CPU time at the start.
fn release(
    dist: &Dist,
    gate: &StartGate,
    flags: &Flags,
    shift: &OnceLock<Shift>,
    clock_offset_ns: i64,
) -> u64 {
    let mut cpu_at_start = 0u64;
    let ok = gate.release_agreed(|ok| {
        cpu_at_start = process_cpu_ns();
        let (wall0, rank0_start) = dist.agree_start(ok, 0, START_IN)?;
        // Rank 0's start instant on this host's wall clock, then on this run clock.
        let until = wall0 + clock_offset_ns - wall_ns();
        let local_start = (flags.clock.now_ns() as i64 + until.max(0)) as u64;
        let _ = shift.set(Shift {
            local_start,
            rank0_start,
        });
        Some(local_start)
    });
    if !ok {
        flags.control.stop.store(true, Ordering::Relaxed);
    }
    cpu_at_start
}

/// How this rank's workers ended, times on rank 0's run clock: their outcomes, then the
/// sessions that could not open.
fn worker_ends(joined: Joined, shift: Shift) -> Vec<WorkerEndWire> {
    let mut workers: Vec<WorkerEndWire> = joined
        .outcomes
        .iter()
        .map(|o| WorkerEndWire {
            worker: o.worker,
            end_reason: o.end_reason,
            measured_ops: o.measured_ops,
            measure_start_ns: shift.to_rank0(o.measure_start_ns),
            last_completion_ns: shift.to_rank0(o.last_completion_ns),
            spare_waits: o.spare_waits,
            spare_wait_ns: o.spare_wait_ns,
            skipped_starts: o.skipped_starts,
            used: o
                .used
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            open_error: None,
            pinned_cpus: o.pinned_cpus.clone(),
        })
        .collect();
    for (w, e) in joined.failures.into_iter().map(|f| f.into_text()) {
        workers.push(WorkerEndWire {
            worker: w,
            end_reason: storlab_record::EndReason::NotStarted,
            measured_ops: 0,
            measure_start_ns: 0,
            last_completion_ns: 0,
            spare_waits: 0,
            spare_wait_ns: 0,
            skipped_starts: 0,
            used: Vec::new(),
            open_error: Some(e),
            pinned_cpus: None,
        });
    }
    workers
}

/// What the shipper of one run on this rank knows: the communicator, the run, how many local
/// workers send intervals, the run's stop flags, the shift onto rank 0's clock (set once the
/// start is agreed) and the count of local workers done.
struct Shipper<'a> {
    dist: &'a Dist,
    run_index: usize,
    local: usize,
    control: &'a Control,
    shift: &'a OnceLock<Shift>,
    fg_done: &'a AtomicUsize,
}

impl Shipper<'_> {
    /// The shipper: sends every local interval to rank 0 as it arrives, hands it back to its
    /// worker, and obeys rank 0's stop; ends when every local worker has sent its last. Returns
    /// the bytes and messages sent.
    fn ship(
        &self,
        rx: Receiver<Box<Interval>>,
        spares: Vec<SyncSender<Box<Interval>>>,
    ) -> (u64, u64) {
        let Shipper {
            dist,
            run_index,
            local,
            control,
            shift,
            fg_done,
        } = *self;
        let mut ser = V2Serializer::new();
        let mut buf = Vec::with_capacity(64 * 1024);
        let (mut bytes, mut messages) = (0u64, 0u64);
        let mut finished = 0usize;
        let mut done_sent = false;
        while finished < local {
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(mut iv) => {
                    if let Some(s) = shift.get() {
                        iv.start_ns = s.to_rank0(iv.start_ns);
                        iv.end_ns = s.to_rank0(iv.end_ns);
                    }
                    buf.clear();
                    wire::encode_interval(&iv, &mut ser, &mut buf);
                    dist.send(0, TAG_INTERVAL, &buf);
                    bytes += buf.len() as u64;
                    messages += 1;
                    if iv.last {
                        finished += 1;
                    }
                    let w = iv.worker as usize;
                    iv.clear();
                    if let Some(s) = spares.get(w) {
                        let _ = s.try_send(iv);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if let Some(stop) = dist.try_receive(0, TAG_STOP) {
                match serde_json::from_slice::<(usize, Stop)>(&stop) {
                    Ok((r, Stop::Stonewall)) if r == run_index => {
                        control.stonewall.store(true, Ordering::Relaxed)
                    }
                    Ok((r, Stop::Interrupted)) if r == run_index => {
                        control.interrupted.store(true, Ordering::Relaxed)
                    }
                    Ok((r, Stop::SteadyState)) if r == run_index => {
                        control.steady_state.store(true, Ordering::Relaxed)
                    }
                    _ => {}
                }
            }
            if !done_sent && local > 0 && fg_done.load(Ordering::Relaxed) >= local {
                dist.send(0, TAG_DONE, &(run_index as u64).to_le_bytes());
                done_sent = true;
            }
        }
        (bytes, messages)
    }
}
