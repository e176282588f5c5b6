//! Rank 0 of a distributed run: keeps its own share of the workers, hears every other rank's
//! opening (host, clock offset, system capture), agrees the start, receives its children's
//! streams in the gather tree (see `tree`: each already merged below it) on its own thread
//! and feeds them to the collector its own workers feed, stops every rank for the stonewall,
//! steady state or an interruption, notices a child that went silent, and keeps every rank's
//! end report (its own figures, sent once) for the run's results (`finish`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::SyncSender;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::Deserializer;

use super::comm::{Dist, current};
use super::gather::{Child, stale_after, worker_kinds};
use super::tree;
use super::wire::{
    Final, Hello, KindTotalsWire, LostWire, Stop, TAG_DONE, TAG_FINAL, TAG_HELLO, TAG_INTERVAL,
    TAG_STOP,
};
use super::{assign_workers, keep_share};
use crate::RunError;
use crate::collector::Collected;
use crate::setup::Workers;
use crate::worker::{Clock, Control, WorkerOutcome};
use storlab_record::{Interval, thread_cpu_ns};
use storlab_study::plan::RunPlan;
use storlab_targets::TargetError;

/// Ping-pongs per rank for the clock offset.
pub(super) const PINGS: u32 = 16;
/// How long after the agreement every rank starts.
pub(super) const START_IN: Duration = Duration::from_millis(200);
/// After an interruption, how long a parent waits for its children's last intervals, per
/// level of the tree below it (its children wait for theirs first).
pub(super) const INTERRUPT_GRACE: Duration = Duration::from_millis(300);

/// How long rank `rank` waits for its children after an interruption.
pub(super) fn interrupt_grace(rank: u32, size: u32) -> Duration {
    INTERRUPT_GRACE * tree::height(rank, size).max(1)
}

/// Rank 0's side of one distributed run.
pub struct Rank0Run {
    pub(super) dist: &'static Dist,
    pub(super) assignment: Vec<u32>,
    /// Per worker of the run's targets: its target.
    worker_target: Vec<u32>,
    /// The collector's own workers (every worker of the run: rank 0's feed it, the others'
    /// are ended at once); the children's streams come after, as workers of their own.
    collector_workers: usize,
    /// Per child stream (the collector's worker `collector_workers + i`): (child, stream id).
    streams: Vec<(u32, u32)>,
    pub(super) hellos: Vec<Hello>,
    /// Rank 0's start: wall clock ns, run clock ns.
    pub(super) start: OnceLock<(i64, u64)>,
    stonewall: bool,
    run_index: usize,
    interval_ns: u64,
    pub(super) warmup_ns: u64,
}

/// What rank 0's receiving thread heard.
pub struct Received {
    pub(super) ranks: Vec<RankState>,
    pub(super) stonewall: Option<(u32, u64)>,
    pub(super) cpu_ns: u64,
    pub(super) intervals: u64,
    pub(super) bytes: u64,
}

#[derive(Default)]
pub(super) struct RankState {
    pub final_: Option<Final>,
    /// Bytes of its end report.
    pub final_bytes: u64,
    pub lost: Option<Lost>,
}

/// A rank lost mid-run.
pub(super) struct Lost {
    /// When it was last heard (run clock, ns).
    pub at_ns: u64,
    /// Cut off: its intervals went through this lost rank.
    pub behind: Option<u32>,
    pub bytes: u64,
    pub messages: u64,
    /// Its own workers' figures as they reached its parent.
    pub totals: Vec<KindTotalsWire>,
}

impl RankState {
    /// Lost, or has sent its end report.
    fn done(&self) -> bool {
        self.lost.is_some() || self.final_.is_some()
    }
}

/// Marks `lost.rank` lost (unless it already is; a rank only cut off takes its parent's
/// report) and every rank below it, cut off.
fn mark_lost(ranks: &mut [RankState], lost: LostWire) {
    let size = ranks.len() as u32;
    let at_ns = lost.last_heard_ns.max(1);
    for b in tree::below(lost.rank, size) {
        ranks[b as usize].lost.get_or_insert(Lost {
            at_ns,
            behind: Some(lost.rank),
            bytes: 0,
            messages: 0,
            totals: Vec::new(),
        });
    }
    let slot = &mut ranks[lost.rank as usize].lost;
    if slot.as_ref().is_none_or(|l| l.behind.is_some()) {
        *slot = Some(Lost {
            at_ns,
            behind: None,
            bytes: lost.bytes,
            messages: lost.messages,
            totals: lost.totals,
        });
    }
}

/// The stops rank 0 has sent during one run.
#[derive(Default)]
struct Stops {
    /// The rank that finished first and when (run clock, ns).
    stonewall: Option<(u32, u64)>,
    stop_sent: bool,
    steady_sent: bool,
    interrupted_at: Option<Instant>,
}

impl Rank0Run {
    /// When running as rank 0 of an MPI job: keeps rank 0's share of `workers` and hears
    /// every other rank's opening. `system`: rank 0's own system capture.
    pub fn begin(
        run: &RunPlan,
        workers: &mut Workers,
        system: serde_json::Value,
    ) -> Result<Option<Rank0Run>, RunError> {
        let Some(dist) = current() else {
            return Ok(None);
        };
        let assignment = assign_workers(run, &dist.hosts).map_err(placement)?;
        keep_share(workers, &assignment, 0);
        let mut hellos = vec![Hello {
            rank: 0,
            host: dist.host().to_string(),
            pid: std::process::id(),
            clock_offset_ns: 0,
            clock_rtt_ns: 0,
            system,
            error: None,
        }];
        for r in 1..dist.size {
            dist.serve_offset(r, PINGS);
            let bytes = dist.receive(r, TAG_HELLO);
            let hello: Hello = serde_json::from_slice(&bytes).map_err(|e| {
                RunError::Thread(std::io::Error::other(format!(
                    "rank {r}'s opening message: {e}"
                )))
            })?;
            hellos.push(hello);
        }
        let worker_target = tree::worker_targets(run);
        let streams = tree::children(0, dist.size)
            .flat_map(|c| {
                tree::streams_of(c, dist.size, &assignment, &worker_target)
                    .into_iter()
                    .map(move |id| (c, id))
            })
            .collect();
        Ok(Some(Rank0Run {
            dist,
            assignment,
            worker_target,
            collector_workers: workers.worker_target.len(),
            streams,
            hellos,
            start: OnceLock::new(),
            stonewall: run.stonewall,
            run_index: run.index,
            interval_ns: run.interval.0.as_nanos() as u64,
            warmup_ns: run.warmup.0.as_nanos() as u64,
        }))
    }

    /// Per worker (global index): its rank.
    pub fn assignment(&self) -> &[u32] {
        &self.assignment
    }

    /// Adds rank 0's children's streams to the collector's workers, after the run's own (their
    /// intervals go back to no one).
    pub fn add_streams(
        &self,
        spare_senders: &mut Vec<SyncSender<Box<Interval>>>,
        worker_target: &mut Vec<u32>,
    ) {
        for (_, id) in &self.streams {
            spare_senders.push(std::sync::mpsc::sync_channel(0).0);
            worker_target.push(id / 2);
        }
    }

    /// A rank whose targets could not be prepared: the first, and why.
    pub fn remote_error(&self) -> Option<(u32, String)> {
        self.hellos
            .iter()
            .find_map(|h| h.error.clone().map(|e| (h.rank, e)))
    }

    /// Joins every rank's agreement on the start (`ok`: this rank's sessions all opened);
    /// returns rank 0's start on its run clock.
    pub fn agree(&self, ok: bool, clock: &Clock) -> Option<u64> {
        let ok = ok && self.remote_error().is_none();
        let (wall, start_ns) = self.dist.agree_start(ok, clock.now_ns(), START_IN)?;
        let _ = self.start.set((wall, start_ns));
        Some(start_ns)
    }

    /// Rank 0's receiving thread: until every child has sent its streams' last intervals (or
    /// went silent) and every rank its end report (or is lost), feeds the children's
    /// intervals into `tx` (the collector's channel). `local_fg_done` counts rank 0's own
    /// targets' workers that have ended.
    pub fn receive(
        &self,
        tx: SyncSender<Box<Interval>>,
        control: &Control,
        clock: &Clock,
        local_fg_done: &AtomicUsize,
        local_fg: usize,
    ) -> Received {
        let cpu0 = thread_cpu_ns();
        self.end_remote_workers(&tx);
        let mut children = self.children();
        let mut ranks: Vec<RankState> = (0..self.dist.size).map(|_| RankState::default()).collect();
        let mut de = Deserializer::new();
        let mut stops = Stops::default();
        let mut counts = (0u64, 0u64);
        let stale = stale_after(self.interval_ns);
        let grace = interrupt_grace(0, self.dist.size);
        let mut children_done_at: Option<Instant> = None;
        loop {
            let got_intervals =
                self.take_intervals(&mut children, &mut de, &tx, clock, &mut counts);
            let got_finals = self.take_finals(&mut ranks);
            let mut first_done = None;
            while let Some((r, bytes)) = self.dist.try_receive_any(TAG_DONE) {
                if bytes == (self.run_index as u64).to_le_bytes() {
                    first_done.get_or_insert(r);
                }
            }
            if local_fg > 0 && local_fg_done.load(Ordering::Relaxed) >= local_fg {
                first_done.get_or_insert(0);
            }
            let started = self.start.get().is_some();
            self.send_stops(&mut stops, &ranks, first_done, started, control, clock);
            // Silent children are lost: their streams end with what they sent.
            let grace_over = stops.interrupted_at.is_some_and(|t| {
                t.elapsed() > grace && local_fg_done.load(Ordering::Relaxed) >= local_fg
            });
            if started {
                self.lose_silent(&mut children, &mut ranks, &tx, stale, grace_over);
            }
            if children.iter().all(Child::done) {
                // Every rank sends its end report straight here once its streams ended: one
                // still missing a while after is lost.
                let at = *children_done_at.get_or_insert_with(Instant::now);
                if grace_over || at.elapsed() > stale {
                    for (r, s) in ranks.iter_mut().enumerate().skip(1) {
                        if !s.done() {
                            let heard = children.iter().find(|c| c.rank == r as u32);
                            s.lost = Some(Lost {
                                at_ns: heard.map_or(clock.now_ns(), |c| c.last_heard_ns),
                                behind: None,
                                bytes: heard.map_or(0, |c| c.bytes),
                                messages: heard.map_or(0, |c| c.messages),
                                totals: heard.map_or(Vec::new(), |c| c.own.to_wire()),
                            });
                        }
                    }
                }
                if ranks.iter().skip(1).all(RankState::done) {
                    break;
                }
            }
            if !(got_intervals || got_finals) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Received {
            ranks,
            stonewall: stops.stonewall,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu0),
            intervals: counts.0,
            bytes: counts.1,
        }
    }

    /// The other ranks' workers send the collector nothing (their figures come merged in the
    /// children's streams): each is ended at once, with an empty last interval past every
    /// second (the collector adds nothing and writes no row for it).
    fn end_remote_workers(&self, tx: &SyncSender<Box<Interval>>) {
        for (w, r) in self.assignment.iter().enumerate() {
            let Some(t) = self.worker_target.get(w).filter(|_| *r != 0) else {
                continue;
            };
            let mut iv = Interval::new(w as u32, *t, &[], false);
            iv.index = i64::MAX;
            iv.last = true;
            let _ = tx.send(iv);
        }
    }

    /// Rank 0's children, each stream feeding its collector worker.
    fn children(&self) -> Vec<Child> {
        tree::children(0, self.dist.size)
            .map(|c| {
                let streams = self
                    .streams
                    .iter()
                    .enumerate()
                    .filter(|(_, (r, _))| *r == c)
                    .map(|(i, (_, id))| (*id, self.collector_workers + i))
                    .collect();
                Child::new(c, streams)
            })
            .collect()
    }

    /// Feeds every interval the children have sent into `tx`; true if there was any.
    fn take_intervals(
        &self,
        children: &mut [Child],
        de: &mut Deserializer,
        tx: &SyncSender<Box<Interval>>,
        clock: &Clock,
        (intervals, bytes_in): &mut (u64, u64),
    ) -> bool {
        let mut busy = false;
        while let Some((r, bytes)) = self.dist.try_receive_any(TAG_INTERVAL) {
            busy = true;
            let Some(c) = children.get_mut((r as usize).wrapping_sub(1)) else {
                continue;
            };
            *bytes_in += bytes.len() as u64;
            match c.take(&bytes, de, clock.now_ns()) {
                Ok(Some((input, mut iv))) => {
                    *intervals += 1;
                    iv.worker = input as u32;
                    if tx.send(iv).is_err() {
                        break;
                    }
                }
                Ok(None) => {}
                Err(e) => eprintln!("storlab rank 0: {e}"),
            }
        }
        busy
    }

    /// Children silent for `stale` (or, once the grace after an interruption is over, any not
    /// done) are lost, and the ranks below them cut off: their streams' last intervals are
    /// made up, empty, so that the collector finishes with what they sent.
    fn lose_silent(
        &self,
        children: &mut [Child],
        ranks: &mut [RankState],
        tx: &SyncSender<Box<Interval>>,
        stale: Duration,
        grace_over: bool,
    ) {
        for c in children.iter_mut() {
            if !c.lose_if_silent(stale, grace_over) {
                continue;
            }
            for input in c.inputs() {
                let id = self.streams[input - self.collector_workers].1;
                let mut iv = Interval::new(input as u32, id / 2, &[], false);
                iv.index = i64::MAX;
                iv.last = true;
                let _ = tx.send(iv);
            }
            mark_lost(ranks, c.to_lost());
        }
    }

    /// Keeps every end report the other ranks have sent, and the children they declared
    /// lost; true if there was any.
    fn take_finals(&self, ranks: &mut [RankState]) -> bool {
        let mut busy = false;
        while let Some((r, bytes)) = self.dist.try_receive_any(TAG_FINAL) {
            busy = true;
            match serde_json::from_slice::<Final>(&bytes) {
                Ok(mut f) => {
                    for lost in std::mem::take(&mut f.lost) {
                        mark_lost(ranks, lost);
                    }
                    let s = &mut ranks[r as usize];
                    s.final_bytes = bytes.len() as u64;
                    s.final_ = Some(f);
                }
                Err(e) => eprintln!("storlab rank 0: rank {r}'s end report: {e}"),
            }
        }
        busy
    }

    /// Stops every rank, once: for the stonewall (`first_done`: the first rank whose
    /// targets' workers have all ended), steady state, or an interruption.
    fn send_stops(
        &self,
        stops: &mut Stops,
        ranks: &[RankState],
        first_done: Option<u32>,
        started: bool,
        control: &Control,
        clock: &Clock,
    ) {
        if self.stonewall
            && stops.stonewall.is_none()
            && !stops.stop_sent
            && started
            && let Some(r) = first_done
        {
            stops.stonewall = Some((r, clock.now_ns()));
            control.stonewall.store(true, Ordering::Relaxed);
            self.stop_all(ranks, Stop::Stonewall);
            stops.stop_sent = true;
        }
        // Steady state is judged on rank 0 from every rank's merged intervals: it stops
        // every rank, as the stonewall does.
        if !stops.steady_sent && control.steady_state.load(Ordering::Relaxed) {
            self.stop_all(ranks, Stop::SteadyState);
            stops.steady_sent = true;
        }
        if control.interrupted.load(Ordering::Relaxed) && stops.interrupted_at.is_none() {
            stops.interrupted_at = Some(Instant::now());
            self.stop_all(ranks, Stop::Interrupted);
        }
    }

    fn stop_all(&self, ranks: &[RankState], stop: Stop) {
        let bytes = serde_json::to_vec(&(self.run_index, stop)).expect("a stop serializes");
        for (r, s) in ranks.iter().enumerate().skip(1) {
            if !s.done() {
                self.dist.send(r as u32, TAG_STOP, &bytes);
            }
        }
    }

    /// The collector's per-worker figures for the other ranks' workers, from their end
    /// reports (the collector saw only merged streams), and each rank's own figures per
    /// target and kind: its end report's, or for a lost rank what reached its parent.
    pub fn merge_collected(&self, received: &Received, collected: &mut Collected) {
        let n = self.collector_workers;
        collected.worker_cpu_ns.truncate(n);
        collected.worker_wall_ns.truncate(n);
        collected.worker_totals.truncate(n);
        collected.worker_shape.truncate(n);
        let groups = &mut collected.group_totals;
        groups.resize_with(received.ranks.len().max(groups.len()), Vec::new);
        for (r, s) in received.ranks.iter().enumerate().skip(1) {
            let totals = match (&s.lost, &s.final_) {
                (Some(l), _) => &l.totals,
                (None, Some(f)) => &f.totals,
                (None, None) => continue,
            };
            for t in totals {
                let (Some(dst), Some(src)) = (
                    groups[r]
                        .get_mut(t.target as usize)
                        .and_then(|k| k.get_mut(t.kind as usize))
                        .and_then(Option::as_mut),
                    t.decode(),
                ) else {
                    continue;
                };
                dst.add_totals(&src);
            }
            for w in s.final_.iter().flat_map(|f| &f.worker_totals) {
                let i = w.worker as usize;
                if i < n {
                    collected.worker_cpu_ns[i] = w.cpu_ns;
                    collected.worker_wall_ns[i] = w.wall_ns;
                    collected.worker_totals[i] = worker_kinds(w);
                }
            }
        }
    }

    /// The other ranks' accelerators, added to rank 0's own (per training target).
    pub fn merge_training(
        &self,
        received: &Received,
        training: &mut Vec<(usize, Vec<storlab_model::training::AcceleratorSteps>)>,
    ) {
        for s in received.ranks.iter().skip(1) {
            let Some(f) = &s.final_ else { continue };
            for (target, steps) in &f.training {
                match training.iter_mut().find(|(t, _)| t == target) {
                    Some((_, mine)) => mine.extend(steps.iter().cloned()),
                    None => training.push((*target, steps.clone())),
                }
            }
        }
    }

    /// Adds the other ranks' workers' ends (times already on rank 0's clock) and CPU time;
    /// returns the sessions they could not open.
    pub fn merge_outcomes(
        &self,
        received: &Received,
        outcomes: &mut Vec<WorkerOutcome>,
        cpu_used_ns: &mut u64,
    ) -> Vec<(String, TargetError)> {
        let mut errors = Vec::new();
        for (r, s) in received.ranks.iter().enumerate().skip(1) {
            let Some(f) = &s.final_ else { continue };
            *cpu_used_ns += f.cpu_used_ns;
            for w in &f.workers {
                if let Some(e) = &w.open_error {
                    errors.push((
                        format!("rank {r} ({})", self.dist.hosts[r]),
                        TargetError::Invalid(e.clone()),
                    ));
                    continue;
                }
                outcomes.push(WorkerOutcome {
                    worker: w.worker,
                    end_reason: w.end_reason,
                    measured_ops: w.measured_ops,
                    measure_start_ns: w.measure_start_ns,
                    last_completion_ns: w.last_completion_ns,
                    spare_waits: w.spare_waits,
                    spare_wait_ns: w.spare_wait_ns,
                    skipped_starts: w.skipped_starts,
                    fatal: None,
                    used: w.used.iter().map(|(k, v)| (intern(k), v.clone())).collect(),
                    latency_search: None,
                    pinned_cpus: w.pinned_cpus.clone(),
                });
            }
        }
        outcomes.sort_by_key(|o| o.worker);
        errors
    }
}

fn placement(e: super::DistError) -> RunError {
    RunError::Target {
        target: "distributed".into(),
        source: TargetError::Invalid(e.to_string()),
    }
}
/// Keys of what sessions used, as `&'static str` (each distinct key is kept once).
fn intern(key: &str) -> &'static str {
    static KEYS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut keys = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = keys.iter().find(|k| **k == key) {
        return k;
    }
    let k: &'static str = Box::leak(key.to_string().into_boxed_str());
    keys.push(k);
    k
}
