//! A rank other than 0 of a distributed run: for each run of the plan, prepares the targets,
//! keeps its share of the workers, measures its clock offset to rank 0 and sends its opening,
//! joins the agreed start, and from one shipper thread merges its workers' intervals (times
//! moved onto rank 0's run clock) with its children's in the gather tree and sends them to
//! its parent (see `tree`), while watching for rank 0's stop; at its end it sends rank 0 its
//! own figures and what gathering cost it. It
//! writes no results of its own: rank 0 stores the run. The study's events, the read-back
//! after a run and background workers are rank 0's alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use std::time::Instant;

use hdrhistogram::serialization::{Deserializer, V2Serializer};

use super::comm::{Dist, wall_ns};
use super::gather::{Child, OwnTotals, WorkerTotals, stale_after};
use super::rank0::{PINGS, START_IN, interrupt_grace};
use super::tree::{self, Part, StreamMerge, part_of, stream_id};
use super::wire::{
    self, Final, GatherWire, Hello, LostWire, Stop, TAG_DONE, TAG_FINAL, TAG_HELLO, TAG_INTERVAL,
    TAG_STOP, WorkerEndWire,
};
use super::{assign_workers, keep_share};
use crate::threads::{Armed, Flags, Joined, join_workers, spawn_workers};
use crate::worker::{Clock, Control, StartGate};
use crate::{RunError, RunOptions, StudyOutcome, setup};
use storlab_model::Region;
use storlab_record::{Interval, process_cpu_ns, thread_cpu_ns};
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
    let worker_target = tree::worker_targets(run);
    let flags = Flags::new(opts.interrupted.clone());
    let shift: OnceLock<Shift> = OnceLock::new();
    let mut cpu_at_start = 0u64;
    let (joined, sent, training) = std::thread::scope(|scope| -> Result<_, RunError> {
        let shipper = {
            let rank = Shipper {
                dist,
                run_index: run.index,
                interval_ns: run.interval.0.as_nanos() as u64,
                assignment: &assignment,
                worker_target: &worker_target,
                local,
                control: &flags.control,
                clock: &flags.clock,
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
        bytes_sent: sent.bytes,
        messages_sent: sent.messages,
        training,
        totals: sent.own.to_wire(),
        worker_totals: sent.workers.to_wire(),
        lost: sent.lost,
        gather: sent.gather,
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

/// What the shipper of one run on this rank knows: the communicator, the run, which rank
/// runs each worker and each worker's target, how many local workers send intervals, the
/// run's stop flags, the shift onto rank 0's clock (set once the start is agreed) and the
/// count of local workers done.
struct Shipper<'a> {
    dist: &'a Dist,
    run_index: usize,
    interval_ns: u64,
    assignment: &'a [u32],
    worker_target: &'a [u32],
    local: usize,
    control: &'a Control,
    clock: &'a Clock,
    shift: &'a OnceLock<Shift>,
    fg_done: &'a AtomicUsize,
}

/// What the shipper sent and kept over a run, for its end report.
#[derive(Default)]
struct Shipped {
    bytes: u64,
    messages: u64,
    gather: GatherWire,
    own: OwnTotals,
    workers: WorkerTotals,
    lost: Vec<LostWire>,
}

/// The shipper's merge: its local workers' streams and its children's, each an input.
struct Inputs {
    merge: StreamMerge,
    /// Per local worker (global index): its input.
    local: BTreeMap<u32, usize>,
    children: Vec<Child>,
}

impl Shipper<'_> {
    /// This rank's inputs: each local worker into its target's own stream, each child's
    /// streams into their target's rest stream.
    fn inputs(&self) -> Inputs {
        let (rank, size) = (self.dist.rank, self.dist.size);
        let mut merge = StreamMerge::default();
        let mut local = BTreeMap::new();
        for (w, (a, t)) in self.assignment.iter().zip(self.worker_target).enumerate() {
            if *a == rank {
                local.insert(w as u32, merge.add_input(stream_id(*t, Part::Own), *t));
            }
        }
        let children = tree::children(rank, size)
            .map(|c| {
                let streams = tree::streams_of(c, size, self.assignment, self.worker_target)
                    .into_iter()
                    .map(|id| (id, merge.add_input(stream_id(id / 2, Part::Rest), id / 2)))
                    .collect();
                Child::new(c, streams)
            })
            .collect();
        Inputs {
            merge,
            local,
            children,
        }
    }

    /// The shipper: merges its local workers' intervals and its children's streams (see
    /// `tree`) and sends each complete interval to its parent, hands the workers' intervals
    /// back, and obeys rank 0's stop; ends when every stream it sends has sent its last.
    fn ship(&self, rx: Receiver<Box<Interval>>, spares: Vec<SyncSender<Box<Interval>>>) -> Shipped {
        let cpu0 = thread_cpu_ns();
        let mut inp = self.inputs();
        let mut out = Shipped::default();
        let (mut ser, mut de) = (V2Serializer::new(), Deserializer::new());
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut ready = Vec::new();
        let mut done_sent = false;
        let mut last_sent = Instant::now();
        let mut interrupted_at: Option<Instant> = None;
        let parent = tree::parent(self.dist.rank).unwrap_or(0);
        let grace = interrupt_grace(self.dist.rank, self.dist.size);
        while !inp.merge.done() {
            self.take_local(&rx, &spares, &mut inp, &mut out.workers);
            self.take_children(&mut inp, &mut de, &mut out.gather);
            inp.merge.ready(&mut ready);
            for iv in ready.drain(..) {
                if part_of(iv.worker) == Part::Own {
                    out.own.add(&iv);
                }
                buf.clear();
                wire::encode_interval(&iv, &mut ser, &mut buf);
                self.dist.send(parent, TAG_INTERVAL, &buf);
                (out.bytes, out.messages) = (out.bytes + buf.len() as u64, out.messages + 1);
                last_sent = Instant::now();
            }
            // Waiting on a child: say this rank is alive, so that its parent does not take its
            // silence for a loss.
            if last_sent.elapsed() > Duration::from_nanos(self.interval_ns / 2) {
                self.dist.send(parent, TAG_INTERVAL, &[]);
                out.messages += 1;
                last_sent = Instant::now();
            }
            self.obey_stop();
            if self.control.interrupted.load(Ordering::Relaxed) {
                interrupted_at.get_or_insert_with(Instant::now);
            }
            let all_local_done = self.fg_done.load(Ordering::Relaxed) >= self.local;
            if !done_sent && self.local > 0 && all_local_done {
                let run = (self.run_index as u64).to_le_bytes();
                self.dist.send(0, TAG_DONE, &run);
                done_sent = true;
            }
            let grace_over = interrupted_at.is_some_and(|t| t.elapsed() > grace) && all_local_done;
            if self.shift.get().is_some() {
                self.lose_silent(&mut inp, grace_over, &mut out.lost);
            }
        }
        out.gather.cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
        out.gather.histogram_merges = inp.merge.merges;
        out
    }

    /// Takes the local workers' intervals waiting (times moved onto rank 0's clock) into the
    /// merge and hands them back.
    fn take_local(
        &self,
        rx: &Receiver<Box<Interval>>,
        spares: &[SyncSender<Box<Interval>>],
        inp: &mut Inputs,
        workers: &mut WorkerTotals,
    ) {
        // Waits for the first (a few ms at most: the children's messages and rank 0's stop
        // are polled between), then takes what else is there.
        let mut next = match rx.recv_timeout(Duration::from_millis(5)) {
            Ok(iv) => Some(iv),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                // Every local worker has ended; one that never started sent no last.
                for i in inp.local.values() {
                    inp.merge.end_input(*i);
                }
                std::thread::sleep(Duration::from_millis(5));
                None
            }
        };
        while let Some(mut iv) = next.take() {
            if let Some(s) = self.shift.get() {
                iv.start_ns = s.to_rank0(iv.start_ns);
                iv.end_ns = s.to_rank0(iv.end_ns);
            }
            workers.add(&iv);
            if let Some(i) = inp.local.get(&iv.worker) {
                inp.merge.add(*i, &iv);
            }
            let w = iv.worker as usize;
            iv.clear();
            if let Some(s) = spares.get(w) {
                let _ = s.try_send(iv);
            }
            next = rx.try_recv().ok();
        }
    }

    /// Takes the children's messages waiting into the merge.
    fn take_children(&self, inp: &mut Inputs, de: &mut Deserializer, g: &mut GatherWire) {
        let first = tree::children(self.dist.rank, self.dist.size).start;
        while let Some((r, bytes)) = self.dist.try_receive_any(TAG_INTERVAL) {
            let Some(c) = inp.children.get_mut(r.wrapping_sub(first) as usize) else {
                continue;
            };
            g.bytes_received += bytes.len() as u64;
            g.messages_received += 1;
            let now = self
                .shift
                .get()
                .map_or(0, |s| s.to_rank0(self.clock.now_ns()));
            match c.take(&bytes, de, now) {
                Ok(Some((input, iv))) => inp.merge.add(input, &iv),
                Ok(None) => {}
                Err(e) => eprintln!("storlab rank {}: {e}", self.dist.rank),
            }
        }
    }

    /// Children silent too long, or not done once the grace after an interruption is over,
    /// are lost: their streams end with what they sent.
    fn lose_silent(&self, inp: &mut Inputs, grace_over: bool, lost: &mut Vec<LostWire>) {
        let stale = stale_after(self.interval_ns);
        for c in &mut inp.children {
            if c.lose_if_silent(stale, grace_over) {
                for i in c.inputs() {
                    inp.merge.end_input(i);
                }
                lost.push(c.to_lost());
            }
        }
    }

    /// Rank 0's stop, if one is waiting.
    fn obey_stop(&self) {
        let Some(stop) = self.dist.try_receive(0, TAG_STOP) else {
            return;
        };
        let flag = match serde_json::from_slice::<(usize, Stop)>(&stop) {
            Ok((r, Stop::Stonewall)) if r == self.run_index => &self.control.stonewall,
            Ok((r, Stop::Interrupted)) if r == self.run_index => &self.control.interrupted,
            Ok((r, Stop::SteadyState)) if r == self.run_index => &self.control.steady_state,
            _ => return,
        };
        flag.store(true, Ordering::Relaxed);
    }
}
